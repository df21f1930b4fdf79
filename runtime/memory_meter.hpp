#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "torch_compat/cuda.hpp"

namespace cdui::devices {
class memory_scope;
}

namespace cdui::runtime {

/// What a run holds on its card now and at most, as the run's peak is reported
/// (peak_memory_bytes, docs/training-memory.md).
struct memory_reading {
  /// What its tensors hold now.
  std::int64_t live = 0;
  /// What the card lost to the run at most: the counting allocator's peak (cpu, sim), the caching
  /// allocator's reserved peak (CUDA: blocks it keeps are lost to other processes all the same).
  std::int64_t peak = 0;
  /// CUDA only: the most its tensors held at once, beside the reserved peak.
  std::optional<std::int64_t> allocated_peak;
};

/// The figures a TrainingLoop reports of its card in its final metrics, by name: peak_memory_bytes
/// (what the card lost), activation_bytes (the most a forward pass kept for the backward pass), and
/// on CUDA peak_allocated_bytes (the most its tensors held).
[[nodiscard]] std::vector<std::pair<std::string, std::int64_t>> memory_figures(const memory_reading& reading,
                                                                                std::int64_t activation_bytes);

/// Reads a run's memory on the card it trains on.
class memory_meter {
public:
  virtual ~memory_meter() = default;
  [[nodiscard]] virtual memory_reading read() const = 0;
};

/// The meter of a card that executes on the host (cpu, sim): the run's counting-allocator scope.
[[nodiscard]] std::unique_ptr<memory_meter> scope_meter(const devices::memory_scope& scope);

/// Where a CUDA meter reads the caching allocator's figures of a card (torch_compat::cuda_memory;
/// a test gives its own).
using cuda_figures_source = std::function<std::optional<torch_compat::cuda_memory_figures>(int card)>;

/// The meter of cuda:`card`, its peaks started again from now (torch_compat::reset_cuda_peaks when
/// reading the real allocator); none where the source has no figures (a libtorch without CUDA).
[[nodiscard]] std::unique_ptr<memory_meter> cuda_meter(int card, cuda_figures_source source = {});

} // namespace cdui::runtime
