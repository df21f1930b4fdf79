#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "devices/host_inventory.hpp"

namespace cdui::actors {

struct run_queue_state {
  std::filesystem::path home;
  devices::host_inventory host;
  std::map<std::string, caf::actor> slots;  // by device key
  std::map<std::string, caf::actor> runs;   // by run id
  std::vector<std::string> order;           // run ids in submit order
  static inline const char* name = "run_queue";
};

/// The supervisor of queued runs: validates a submit once, creates the run's folder and actor, and
/// puts it in the FIFO of its device's slot (one device_slot actor per device key).
/// Protocol: (submit, run_request) -> submit_result; (info, id) -> run_info; (list) ->
/// vector<run_info> in submit order; (cancel, id) -> bool; (events, id, cursor, wait_ms) ->
/// event_batch; (wait, id) -> run_info once ended. An unknown id gets an error naming it.
caf::behavior run_queue(caf::stateful_actor<run_queue_state>* self, std::filesystem::path home,
                        devices::host_inventory host);

} // namespace cdui::actors
