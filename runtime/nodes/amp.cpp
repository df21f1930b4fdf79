#include "runtime/nodes/amp.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#ifdef CDUI_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace cdui::runtime::nodes {

namespace {

c10::ScalarType dtype_of(precision p) {
  return p == precision::bf16 ? c10::ScalarType::BFloat16 : c10::ScalarType::Half;
}

} // namespace

bool cuda_has_bf16(c10::Device device) {
#ifdef CDUI_WITH_CUDA
  if (device.is_cuda())
    return at::cuda::getDeviceProperties(device.index() < 0 ? 0 : device.index())->major >= 8;
#endif
  (void)device;
  return false;
}

accelerator_cap::accelerator_cap(const std::string& device, std::int64_t budget) {
#ifdef CDUI_WITH_CUDA
  auto d = c10::Device{device};
  if (d.is_cuda() && budget > 0) {
    cuda_index_ = d.index() < 0 ? 0 : d.index();
    auto total = static_cast<double>(at::cuda::getDeviceProperties(cuda_index_)->totalGlobalMem);
    c10::cuda::CUDACachingAllocator::setMemoryFraction(std::min(1.0, static_cast<double>(budget) / total),
                                                       cuda_index_);
  }
#else
  (void)device;
  (void)budget;
#endif
}

accelerator_cap::~accelerator_cap() {
#ifdef CDUI_WITH_CUDA
  if (cuda_index_ >= 0)
    c10::cuda::CUDACachingAllocator::setMemoryFraction(1.0, cuda_index_);
#endif
}

oom_figures release_accelerator_cache(const std::string& device) {
  oom_figures f;
  f.device = device;
#ifdef CDUI_WITH_CUDA
  auto d = c10::Device{device};
  if (d.is_cuda()) {
    auto index = d.index() < 0 ? 0 : d.index();
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
    using stat = c10::cuda::CUDACachingAllocator::StatType;
    auto all = static_cast<std::size_t>(stat::AGGREGATE);
    f.live = stats.allocated_bytes[all].current;
    f.reserved = stats.reserved_bytes[all].current;
    f.peak = stats.allocated_bytes[all].peak;
    f.total = static_cast<std::int64_t>(at::cuda::getDeviceProperties(index)->totalGlobalMem);
    c10::cuda::CUDACachingAllocator::emptyCache();
  }
#endif
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
  if (device_ == c10::DeviceType::CUDA) {
    was_enabled_ = at::autocast::is_enabled();
    previous_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_enabled(true);
    at::autocast::set_autocast_gpu_dtype(dtype_of(p));
  } else {
    was_enabled_ = at::autocast::is_cpu_enabled();
    previous_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(dtype_of(p));
  }
  at::autocast::increment_nesting();
}

autocast_guard::~autocast_guard() {
  if (!active_)
    return;
  if (at::autocast::decrement_nesting() == 0)
    at::autocast::clear_cache();
  if (device_ == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(previous_dtype_);
  } else {
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(previous_dtype_);
  }
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
