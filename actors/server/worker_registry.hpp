#pragma once

#include <memory>
#include <optional>

#include <caf/fwd.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/policy/worker_table.hpp"
#include "actors/server/zmq_bridge.hpp"
#include "storage/run_store.hpp"

namespace cdui::actors {

/// A run a worker executes: the run's actor on this server, the worker's name, the last of the
/// worker's event cursors received (replays up to it are dropped), and, for a run the last server
/// left running, since when it waits for its worker to bring it back (0: not waiting).
struct remote_run {
  caf::actor run;
  std::string worker;
  std::uint64_t cursor = 0;
  std::int64_t adopting_since_ms = 0;
  /// The cursor a resend was last asked from, and when: one gap costs one request a second.
  std::optional<std::uint64_t> resend_asked;
  std::int64_t resend_asked_ms = 0;
};

/// How long the runs of a worker that lost its connection keep going before they end interrupted
/// (seed 001: CODEFYUI_WORKER_RESUME_GRACE_S, 5 minutes).
inline constexpr double default_resume_grace_s = 300.0;

/// A request for a worker run's recorded outputs, waiting for the agent's answer.
struct pending_outputs {
  caf::response_promise promise;
  std::string worker;
  std::int64_t asked_ms = 0;
};

/// How long the server waits for an agent to send a run's recorded outputs.
inline constexpr std::int64_t outputs_timeout_ms = 10000;

struct worker_registry_state {
  std::unique_ptr<policy::worker_table> table;
  std::shared_ptr<zmq_bridge> bridge;
  /// cdui.db: the enrolled workers (name, credential hash) outlive the server.
  std::shared_ptr<storage::run_store> store;
  caf::actor queue;
  std::int64_t resume_grace_ms = static_cast<std::int64_t>(default_resume_grace_s * 1000);
  std::map<std::string, remote_run> runs;  // by run id
  std::map<std::string, std::vector<pending_outputs>> outputs_waiting;  // by run id
  std::uint64_t refused_hellos = 0;  // for the log's rate limit
  static inline const char* name = "worker_registry";
};

/// The supervisor of workers (DESIGN.md, "Actors"): it takes the agents' hellos and heartbeats
/// from the bridge, answers welcome or refused through it, and marks workers Degraded or
/// Disconnected when their heartbeats are late (ticks at a quarter of the interval). It tells the
/// run queue which workers' slots are open, sends runs to workers and hands their events and ends
/// to the runs' actors. Protocol: (wire_in, identity, hello | heartbeat | run_update | run_done);
/// (assign, assign_run, worker, run actor); (adopt, run id, worker, run actor, cursor): a run the
/// last server left running on a worker; (attach, run queue); (stop, run id, interrupt);
/// (drain, name, on) -> bool
/// (false: no such worker); (enroll, name) and (rekey, name) -> enrollment with a new credential
/// (cdui.db keeps its hash); (outputs, run id, worker) -> outputs_reply: a run's recorded
/// outputs, asked of its worker; (remove, name) -> enrollment: revokes it, disconnects the worker,
/// ends its runs failed and has the queue fail the runs waiting for it; (tick); (workers) -> JSON
/// text for GET /api/workers; (status) -> JSON text for /api/status, the bridge's counters
/// included.
caf::behavior worker_registry(caf::stateful_actor<worker_registry_state>* self,
                              policy::worker_table::config cfg, std::shared_ptr<zmq_bridge> bridge,
                              std::shared_ptr<storage::run_store> store,
                              std::int64_t resume_grace_ms);

} // namespace cdui::actors
