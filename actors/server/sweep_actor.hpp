#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "actors/server/fwd.hpp"
#include "messages/sweep.hpp"
#include "storage/run_store.hpp"

namespace cdui::actors {

struct sweep_actor_state {
  sweep_record sweep;
  run_queue_actor queue;
  std::shared_ptr<storage::run_store> store;
  /// Its runs that have not ended yet.
  std::set<std::string> waiting;
  static inline const char* name = "sweep";
};

/// One sweep, the supervisor of its runs through the run queue (docs/http-api.md,
/// "POST /api/sweeps"): it asks the queue for the end of each of its runs (`wait`), and when the
/// last has ended writes the sweep's final state (policy::state_of) to cdui.db and quits. (cancel):
/// cdui.db records the cancel (the sweep is `cancelling` until its runs have ended), and each run
/// that has not ended is cancelled through the queue (a queued one leaves its queue, a running one
/// stops). Spawned at a submit, and at a restart for each sweep cdui.db lists as active.
sweep_actor::behavior_type sweep_supervisor(sweep_actor::stateful_pointer<sweep_actor_state> self,
                                            sweep_record sweep, std::vector<std::string> runs,
                                            run_queue_actor queue,
                                            std::shared_ptr<storage::run_store> store);

} // namespace cdui::actors
