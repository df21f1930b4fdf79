#pragma once

#include <cstdint>
#include <string>

namespace cdui::runtime {

/// What the allocator held when a node ran out of memory
/// (docs/training-memory.md, "When the card runs out: NodeOOMError").
struct oom_figures {
  std::string device;
  bool simulated = false;
  std::int64_t live = 0;      // held by live tensors
  std::int64_t reserved = 0;  // held by the allocator, cache included
  std::int64_t peak = 0;      // the most this run held on the device
  std::int64_t total = 0;     // the card's memory (0: unknown)
  /// The run's memory budget when it, not the card, was the limit reached (0: it was not), and
  /// where it came from (typed, measured, estimate).
  std::int64_t budget = 0;
  std::string budget_source;
};

/// The NodeOOMError text: which node on which device, the four things to try cheapest first (for
/// a run held to a memory budget, first a larger target.memory_gib, saying where the budget came
/// from), the allocator's figures and the original error. The run is never retried and the batch size is
/// never changed for the user: the message says what to change.
[[nodiscard]] std::string node_oom_message(const std::string& type, const std::string& id,
                                           const oom_figures& figures, const std::string& original);

} // namespace cdui::runtime
