#pragma once

#include <memory>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/worker_table.hpp"
#include "actors/zmq_bridge.hpp"

namespace cdui::actors {

struct worker_registry_state {
  std::unique_ptr<worker_table> table;
  std::shared_ptr<zmq_bridge> bridge;
  static inline const char* name = "worker_registry";
};

/// The supervisor of workers (DESIGN.md, "Actors"): it takes the agents' hellos and heartbeats
/// from the bridge, answers welcome or refused through it, and marks workers Degraded or
/// Disconnected when their heartbeats are late (a tick every second). Protocol:
/// (wire_in, identity, hello | heartbeat | run_update | run_done); (tick); (workers) -> JSON text
/// for GET /api/workers; (status) -> JSON text for /api/status, the bridge's counters included.
caf::behavior worker_registry(caf::stateful_actor<worker_registry_state>* self,
                              worker_table::config cfg, std::shared_ptr<zmq_bridge> bridge);

} // namespace cdui::actors
