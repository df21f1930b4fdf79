#include "runtime/nodes/amp.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include <torch/torch.h>

#include "devices/cuda_cards.hpp"
#include "runtime/memory_meter.hpp"
#include "torch_compat/autocast.hpp"
#include "torch_compat/cuda.hpp"

namespace cdui::runtime::nodes {

namespace {

c10::ScalarType dtype_of(precision p) {
  return p == precision::bf16 ? c10::ScalarType::BFloat16 : c10::ScalarType::Half;
}

} // namespace

bool cuda_has_bf16(c10::Device device) {
  return device.is_cuda() && torch_compat::cuda_compute_major(device.index() < 0 ? 0 : device.index())
                                 >= devices::cuda_bf16_major;
}

accelerator_cap::accelerator_cap(const std::string& device, std::int64_t budget) {
  auto d = c10::Device{device};
  if (!d.is_cuda())
    return;
  auto index = d.index() < 0 ? 0 : d.index();
  // The first to touch the card (setting the fraction may create the context): the process's CUDA
  // context is created here, and what it costs read around it (docs/gpu.md, "The CUDA context").
  static_cast<void>(process_context_window(index));
  if (budget <= 0)
    return;
  auto figures = torch_compat::cuda_memory(index);
  if (!figures || figures->total <= 0)
    return;
  cuda_index_ = index;
  torch_compat::set_cuda_memory_fraction(
    index, std::min(1.0, static_cast<double>(budget) / static_cast<double>(figures->total)));
}

accelerator_cap::~accelerator_cap() {
  if (cuda_index_ >= 0)
    torch_compat::set_cuda_memory_fraction(cuda_index_, 1.0);
}

oom_figures release_accelerator_cache(const std::string& device) {
  oom_figures f;
  f.device = device;
  auto d = c10::Device{device};
  if (!d.is_cuda())
    return f;
  if (auto figures = torch_compat::cuda_memory(d.index() < 0 ? 0 : d.index())) {
    f.live = figures->allocated;
    f.reserved = figures->reserved;
    f.peak = figures->allocated_peak;
    f.total = figures->total;
    torch_compat::release_cuda_cache();
  }
  return f;
}

double cpu_bf16_slowdown() {
  static const double ratio = [] {
    double result = 1.0;
    std::thread probe([&] {
      c10::InferenceMode off{false};
      auto a = torch::linspace(-1.0, 1.0, 64 * 512).reshape({64, 512});
      auto w = torch::linspace(-0.5, 0.5, 512 * 512).reshape({512, 512}).requires_grad_(true);
      auto step_seconds = [&](precision p) {
        autocast_guard autocast{p, c10::DeviceType::CPU};
        double best = 1e9;
        for (int round = 0; round < 4; ++round) {  // the first round warms up
          auto started = std::chrono::steady_clock::now();
          for (int i = 0; i < 4; ++i) {
            a.mm(w).sum().backward();
            w.mutable_grad().reset();
          }
          double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
          if (round > 0)
            best = std::min(best, took);
        }
        return best;
      };
      auto fp32 = step_seconds(precision::fp32);
      auto bf16 = step_seconds(precision::bf16);
      result = fp32 > 0 ? bf16 / fp32 : 1.0;
    });
    probe.join();
    return result;
  }();
  return ratio;
}

autocast_guard::autocast_guard(precision p, c10::DeviceType device) : device_(device) {
  if (p == precision::fp32)
    return;
  active_ = true;
  was_enabled_ = torch_compat::autocast_enabled(device_);
  previous_dtype_ = torch_compat::autocast_dtype(device_);
  torch_compat::set_autocast_enabled(device_, true);
  torch_compat::set_autocast_dtype(device_, dtype_of(p));
  at::autocast::increment_nesting();
}

autocast_guard::~autocast_guard() {
  if (!active_)
    return;
  if (at::autocast::decrement_nesting() == 0)
    at::autocast::clear_cache();
  torch_compat::set_autocast_enabled(device_, was_enabled_);
  torch_compat::set_autocast_dtype(device_, previous_dtype_);
}

grad_scaler::grad_scaler(double scale, bool dynamic) : scale_(scale), dynamic_(dynamic) {}

at::Tensor grad_scaler::scale(const at::Tensor& loss) const {
  return loss * scale_;
}

bool grad_scaler::unscale(const std::vector<at::Tensor>& parameters) const {
  bool finite = true;
  auto inverse = 1.0 / scale_;
  torch::NoGradGuard no_grad;
  for (const auto& p : parameters) {
    auto g = p.grad();
    if (!g.defined())
      continue;
    g.mul_(inverse);
    finite = finite && torch::isfinite(g).all().item<bool>();
  }
  return finite;
}

bool grad_scaler::step(torch::optim::Optimizer& optimizer, bool finite) {
  if (!finite) {
    ++skipped_;
    if (dynamic_) {
      scale_ *= scaler_backoff_factor;
      growth_tracker_ = 0;
    }
    return false;
  }
  optimizer.step();
  if (dynamic_ && ++growth_tracker_ == scaler_growth_interval) {
    scale_ *= scaler_growth_factor;
    growth_tracker_ = 0;
  }
  return true;
}

void grad_scaler::restore(double scale, std::int64_t growth_tracker) {
  scale_ = scale;
  growth_tracker_ = growth_tracker;
}

} // namespace cdui::runtime::nodes
