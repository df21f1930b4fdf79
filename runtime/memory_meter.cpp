#include "runtime/memory_meter.hpp"

#include "devices/memory.hpp"

namespace cdui::runtime {

namespace {

class scope_reader final : public memory_meter {
public:
  explicit scope_reader(const devices::memory_scope& scope) : scope_(scope) {}
  [[nodiscard]] memory_reading read() const override {
    auto s = scope_.stats();
    return {s.live, s.peak, std::nullopt};
  }

private:
  const devices::memory_scope& scope_;
};

class cuda_reader final : public memory_meter {
public:
  cuda_reader(int card, cuda_figures_source source) : card_(card), source_(std::move(source)) {}
  [[nodiscard]] memory_reading read() const override {
    auto f = source_(card_);
    if (!f)
      return {};
    return {f->allocated, f->reserved_peak, f->allocated_peak};
  }

private:
  int card_;
  cuda_figures_source source_;
};

} // namespace

std::vector<std::pair<std::string, std::int64_t>> memory_figures(const memory_reading& reading,
                                                                  std::int64_t activation_bytes) {
  std::vector<std::pair<std::string, std::int64_t>> figures{{"peak_memory_bytes", reading.peak},
                                                            {"activation_bytes", activation_bytes}};
  if (reading.allocated_peak)
    figures.emplace_back("peak_allocated_bytes", *reading.allocated_peak);
  return figures;
}

std::unique_ptr<memory_meter> scope_meter(const devices::memory_scope& scope) {
  return std::make_unique<scope_reader>(scope);
}

std::unique_ptr<memory_meter> cuda_meter(int card, cuda_figures_source source) {
  if (!source) {
    torch_compat::reset_cuda_peaks(card);
    source = [](int index) { return torch_compat::cuda_memory(index); };
  }
  if (!source(card))
    return nullptr;
  return std::make_unique<cuda_reader>(card, std::move(source));
}

} // namespace cdui::runtime
