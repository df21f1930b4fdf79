#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace cdui {

/// Where a run is in its life: queued -> running -> one of the five ends. `pruned`: a study
/// stopped the trial because it fell behind (its error is the pruner's reason).
enum class run_status {
  queued,
  running,
  succeeded,
  failed,
  cancelled,
  interrupted,
  pruned,
};

/// Every status, in the order above (tables, counts, the status filter's help).
inline constexpr run_status all_run_statuses[] = {run_status::queued,    run_status::running,
                                                  run_status::succeeded, run_status::failed,
                                                  run_status::cancelled, run_status::interrupted,
                                                  run_status::pruned};

[[nodiscard]] std::string_view to_string(run_status x);

[[nodiscard]] std::optional<run_status> parse_run_status(std::string_view text);

/// True for the statuses a run never leaves.
[[nodiscard]] constexpr bool is_final(run_status x) {
  return x != run_status::queued && x != run_status::running;
}

/// Why a failed run failed, in a word fit for a metric label (its error is a sentence):
/// out_of_memory (the run ran out of memory on its device or under its budget), worker (its
/// worker went away, was removed, or its supervisor failed), node (a node of the graph failed),
/// or other.
[[nodiscard]] std::string_view failure_kind(std::string_view error);

inline std::ostream& operator<<(std::ostream& out, run_status x) {
  return out << to_string(x);
}

} // namespace cdui
