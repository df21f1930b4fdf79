#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/validate.hpp"

namespace cdui::runtime {

/// One probe of `cdui fit`: a batch size and the peak of one real training step at it.
struct fit_probe {
  std::int64_t batch_size = 0;
  bool fits = false;
  std::int64_t peak_bytes = 0;  // 0 when it did not fit
};

/// What `cdui fit` found: every probe in the order run, the largest batch that fits, and the
/// batch_size x accumulate_steps that keeps the graph's effective batch under the memory.
struct fit_report {
  std::string loop_node;
  std::string loader_node;
  std::int64_t memory_bytes = 0;
  std::int64_t intended_effective_batch = 0;
  std::vector<fit_probe> probes;
  std::int64_t largest_batch = 0;  // 0: not even batch 1 fits
  std::int64_t suggested_batch = 0;
  std::int64_t suggested_accumulate = 0;
  /// False when the effective batch has no divisor that fits, so the suggestion only comes close.
  bool exact = true;
};

/// Finds the largest batch_size of the DataLoader feeding the graph's TrainingLoop whose training
/// step fits under `memory_bytes`, by doubling then bisecting on real training steps on a simulated
/// card of that size (the counting allocator's cap). Opt-in and explicit: it changes nothing in the
/// graph. Throws std::invalid_argument when the graph has no TrainingLoop fed by a DataLoader.
/// `on_probe` is called after each probe (for progress output).
[[nodiscard]] fit_report fit_batch_size(const validated_graph& graph, std::int64_t memory_bytes,
                                        const std::function<void(const fit_probe&)>& on_probe = {});

} // namespace cdui::runtime
