#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "actors/server/run_actor.hpp"
#include "actors/server/run_queue.hpp"

namespace cdui::actors {

/// A run ready to be handed to its actor.
struct prepared_run {
  run_setup setup;
  /// The slots it queues for (empty for a floating run), by slot_key::str().
  std::vector<std::string> keys;
  /// The queue it waits in: its first slot's, or "any" / "one-shot" until a floating run is placed.
  std::string queue_key;
  /// The run's first events: run_warning {kind, message}, e.g. a device_fallback, or an
  /// isolation_fallback (a queued run on a thread although runs are isolated in processes).
  std::vector<std::pair<std::string, std::string>> warnings;
  /// A run for any worker or the one-shot pool: placed when a slot of its kind is free.
  std::optional<policy::floating_run> floating;
  /// Its graph's memory key (runtime::memory_key), by which measured peaks are found and kept;
  /// empty for an interactive run, which is never held to a budget.
  std::string memory_key;
  /// The cards it runs on, for its measured peak: a device set's size, else 1.
  [[nodiscard]] int cards() const { return std::max<int>(1, static_cast<int>(keys.size())); }
};

/// A submission refused: `why`, and whether it is the server's state (503) rather than the
/// request's (400).
[[nodiscard]] inline submit_result refusal(std::string why, bool unavailable = false) {
  submit_result r;
  r.error = std::move(why);
  r.unavailable = unavailable;
  return r;
}

/// Validates a submit's graph (once), places it (policy::place), checks the interactive lane and
/// assembles its run context (seed, threads, flags, stores, isolation). A worker run's slots are
/// opened or closed as its worker is now. `resuming`: a run queued before a restart, whose workers
/// may not have reconnected yet. A refusal comes back as the submit's answer.
[[nodiscard]] std::variant<prepared_run, submit_result> prepare_run(run_queue_state& st,
                                                                    const run_request& req,
                                                                    bool resuming = false);

/// 8 random hex digits (run and sweep ids). Thread-safe.
[[nodiscard]] std::string random_id();

/// A fresh run id: 8 hex digits that name no run folder and no submit waiting to be recorded. One
/// that a stored run has is drawn again as the run is recorded (run_store's inserts, within their
/// transaction: no read of its own per submit).
[[nodiscard]] std::string new_run_id(const run_queue_state& st);

} // namespace cdui::actors
