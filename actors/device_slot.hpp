#pragma once

#include <map>
#include <string>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/slot_queue.hpp"

namespace cdui::actors {

struct device_slot_state {
  slot_queue queue;
  std::map<std::string, caf::actor> runs;
  static inline const char* name = "device_slot";
};

/// One device's slot: a FIFO of run actors, admitted by message (cd_grant) while the slot has room.
/// Protocol: (enqueue, run_id, run actor); (dequeue, run_id) -> bool; (release, run_id).
caf::behavior device_slot(caf::stateful_actor<device_slot_state>* self, std::string key, int limit);

} // namespace cdui::actors
