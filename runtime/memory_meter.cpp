#include "runtime/memory_meter.hpp"

#include <map>
#include <mutex>

#include <unistd.h>

#include "devices/memory.hpp"
#include "devices/nvml.hpp"

namespace cdui::runtime {

namespace {

class scope_reader final : public memory_meter {
public:
  explicit scope_reader(const devices::memory_scope& scope) : scope_(scope) {}
  [[nodiscard]] memory_reading read() const override {
    auto s = scope_.stats();
    return {s.live, s.peak, std::nullopt, {}};
  }

private:
  const devices::memory_scope& scope_;
};

class cuda_reader final : public memory_meter {
public:
  cuda_reader(int card, cuda_sources sources, context_window window)
      : card_(card), sources_(std::move(sources)), window_(window) {}
  [[nodiscard]] memory_reading read() const override {
    auto f = sources_.figures(card_);
    if (!f)
      return {};
    return {f->allocated, f->reserved_peak, f->allocated_peak, {}};
  }
  [[nodiscard]] memory_reading::context_figures context() const override {
    auto f = sources_.figures(card_);
    if (!f)
      return {};
    return {held_context(sources_.usage(card_).held_here, f->reserved), created_context(window_)};
  }

private:
  int card_;
  cuda_sources sources_;
  context_window window_;
};

/// NVML's figures of cuda:`card`: the card is the one whose UUID the CUDA runtime gives it.
card_usage nvml_usage(int card) {
  auto uuids = torch_compat::cuda_uuids();
  auto library = devices::nvml::shared();
  auto* nvml = std::get_if<std::shared_ptr<devices::nvml>>(&library);
  if (card < 0 || static_cast<std::size_t>(card) >= uuids.size() || nvml == nullptr)
    return {};
  const auto& uuid = uuids[static_cast<std::size_t>(card)];
  card_usage out;
  if (auto m = (*nvml)->memory(uuid))
    out.card_used = m->used_bytes;
  out.held_here = (*nvml)->held_by(uuid, static_cast<std::uint32_t>(::getpid()));
  return out;
}

/// The card's used figure just before and after the context is created.
context_window window_around(int card, const cuda_sources& sources) {
  context_window window;
  window.used_before = sources.usage(card).card_used;
  if (sources.create_context)
    sources.create_context(card);
  window.used_after = sources.usage(card).card_used;
  return window;
}

} // namespace

std::optional<std::int64_t> held_context(std::optional<std::int64_t> held, std::int64_t reserved) {
  if (held && *held - reserved >= devices::min_cuda_context_bytes)
    return *held - reserved;
  return std::nullopt;
}

std::optional<std::int64_t> created_context(const context_window& window) {
  if (window.used_before && window.used_after
      && *window.used_after - *window.used_before >= devices::min_cuda_context_bytes)
    return *window.used_after - *window.used_before;
  return std::nullopt;
}

std::vector<std::pair<std::string, std::int64_t>> memory_figures(const memory_reading& reading,
                                                                  std::int64_t activation_bytes) {
  std::vector<std::pair<std::string, std::int64_t>> figures{{"peak_memory_bytes", reading.peak},
                                                            {"activation_bytes", activation_bytes}};
  if (reading.allocated_peak) {
    figures.emplace_back("peak_allocated_bytes", *reading.allocated_peak);
    figures.emplace_back("cuda_context_bytes", reading.context.held.value_or(-1));
    figures.emplace_back("cuda_context_created_bytes", reading.context.created.value_or(-1));
  }
  return figures;
}

std::unique_ptr<memory_meter> scope_meter(const devices::memory_scope& scope) {
  return std::make_unique<scope_reader>(scope);
}

context_window process_context_window(int card) {
  static std::mutex mutex;
  static std::map<int, context_window> windows;
  std::lock_guard lock{mutex};
  if (auto w = windows.find(card); w != windows.end())
    return w->second;
  cuda_sources real{{}, nvml_usage, [](int index) { torch_compat::create_cuda_context(index); }};
  return windows[card] = window_around(card, real);
}

std::unique_ptr<memory_meter> cuda_meter(int card, cuda_sources sources) {
  bool real = !sources.figures;
  if (real) {
    torch_compat::reset_cuda_peaks(card);
    sources = {[](int index) { return torch_compat::cuda_memory(index); }, nvml_usage, {}};
  }
  if (!sources.figures(card))
    return nullptr;
  if (!sources.usage)
    sources.usage = [](int) { return card_usage{}; };
  auto window = real ? process_context_window(card) : window_around(card, sources);
  return std::make_unique<cuda_reader>(card, std::move(sources), window);
}

} // namespace cdui::runtime
