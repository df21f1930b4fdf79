#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cdui::sim {

/// One run of a trace: when it is submitted, the cards it asks for (1, or a device set on one
/// worker, as DDP runs in cdui), what it really holds at its peak on each card, and how long it
/// runs once started. Its budget is the policy's to give (policy_spec).
struct job {
  std::int64_t arrival = 0;   // seconds from the trace's start
  int cards = 1;
  std::int64_t peak = 0;      // bytes per card
  std::int64_t duration = 0;  // seconds
  /// The budget its user typed (bytes per card), for the typed policy; 0: the real peak rounded up
  /// to a whole GiB.
  std::int64_t typed = 0;
};

/// Jobs in arrival order (ties in the order given).
using trace = std::vector<job>;

/// The run id the simulator gives job `index`: "j00000042".
[[nodiscard]] std::string run_name(std::size_t index);
/// run_name()'s index back.
[[nodiscard]] std::size_t run_index(const std::string& run_id);

} // namespace cdui::sim
