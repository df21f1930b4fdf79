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
  /// CUDA only: the CUDA context the run costs, when measured (read with memory_meter::context(),
  /// which asks the driver, once the loop ends).
  struct context_figures {
    /// What the run's process holds on the card besides the caching allocator's blocks: its
    /// context, the kernels loaded into it, the libraries' own memory (cuda_context_bytes).
    std::optional<std::int64_t> held;
    /// What the card lost when the process created its context: the bare context, a floor of the
    /// above (cuda_context_created_bytes).
    std::optional<std::int64_t> created;
  } context;
};

/// A card's used figure the moment before and after this process created its CUDA context there
/// (NVML's, every process counted); none where NVML did not say.
struct context_window {
  std::optional<std::int64_t> used_before;
  std::optional<std::int64_t> used_after;
};

/// What the process holds on the card besides the allocator (docs/gpu.md, "The CUDA context"):
/// NVML's figure for the process (`held`; none where NVML does not list it, as in a container's
/// PID namespace) less what the caching allocator has reserved; none when that is no context's.
[[nodiscard]] std::optional<std::int64_t> held_context(std::optional<std::int64_t> held, std::int64_t reserved);

/// The card's growth across creating the context; none when that is no context's (one existed).
[[nodiscard]] std::optional<std::int64_t> created_context(const context_window& window);

/// The figures a TrainingLoop reports of its card in its final metrics, by name: peak_memory_bytes
/// (what the card lost), activation_bytes (the most a forward pass kept for the backward pass), and
/// on CUDA peak_allocated_bytes (the most its tensors held), cuda_context_bytes and
/// cuda_context_created_bytes (-1: not measured; every rank reports the same names, as the gather
/// across ranks needs).
[[nodiscard]] std::vector<std::pair<std::string, std::int64_t>> memory_figures(const memory_reading& reading,
                                                                                std::int64_t activation_bytes);

/// Reads a run's memory on the card it trains on.
class memory_meter {
public:
  virtual ~memory_meter() = default;
  /// The allocator's figures now: cheap, read around every forward pass.
  [[nodiscard]] virtual memory_reading read() const = 0;
  /// The CUDA context the run costs (held_context, created_context), asking the driver: once, at
  /// the end.
  [[nodiscard]] virtual memory_reading::context_figures context() const { return {}; }
};

/// The meter of a card that executes on the host (cpu, sim): the run's counting-allocator scope.
[[nodiscard]] std::unique_ptr<memory_meter> scope_meter(const devices::memory_scope& scope);

/// Where a CUDA meter reads the caching allocator's figures of a card (torch_compat::cuda_memory;
/// a test gives its own).
using cuda_figures_source = std::function<std::optional<torch_compat::cuda_memory_figures>(int card)>;

/// What NVML says of the card cuda:`card` is now: its used figure, and what this process holds
/// there (none: not said).
struct card_usage {
  std::optional<std::int64_t> card_used;
  std::optional<std::int64_t> held_here;
};
using card_usage_source = std::function<card_usage(int card)>;

/// Where a CUDA meter reads (a test gives its own; empty: the real ones): the allocator's figures,
/// NVML's, and what creates this process's CUDA context on the card.
struct cuda_sources {
  cuda_figures_source figures{};
  card_usage_source usage{};
  std::function<void(int card)> create_context{};
};

/// The meter of cuda:`card`: its peaks started again from now (torch_compat::reset_cuda_peaks when
/// reading the real allocator), and the card's used figure read around creating this process's
/// CUDA context there (with the real sources: process_context_window), so that the context it
/// costs is measured; none where the source has no figures (a libtorch without CUDA).
[[nodiscard]] std::unique_ptr<memory_meter> cuda_meter(int card, cuda_sources sources = {});

/// This process's CUDA context on cuda:`card`, created now if it has none yet with the card's used
/// figure read just before and after (NVML); the same window at every later call (the context is
/// the process's, whichever run made it). Called before anything may create it (a budget's cap).
context_window process_context_window(int card);

} // namespace cdui::runtime
