#pragma once

#include <map>
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/policy/orphan_clock.hpp"
#include "actors/policy/worker_table.hpp"
#include "actors/server/fwd.hpp"
#include "actors/server/worker_proxy.hpp"
#include "actors/server/zmq_bridge.hpp"
#include "storage/run_store.hpp"

namespace cdui::actors {

/// How long the runs of a worker that lost its connection keep going before they end interrupted.
inline constexpr double default_resume_grace_s = policy::default_resume_grace_s;

/// Where a worker run is followed: the worker whose proxy holds it, and the run's actor (so that
/// the registry can end the run when that proxy dies).
struct placed_run {
  std::string worker;
  caf::actor run;
};

struct worker_registry_state {
  std::unique_ptr<policy::worker_table> table;
  std::shared_ptr<zmq_bridge> bridge;
  /// cdui.db: the enrolled workers (name, credential hash) outlive the server.
  std::shared_ptr<storage::run_store> store;
  run_queue_actor queue;
  std::int64_t resume_grace_ms = static_cast<std::int64_t>(default_resume_grace_s * 1000);
  /// One actor per worker that has joined since the start or has runs to adopt, by name; each
  /// monitored.
  std::map<std::string, worker_proxy_actor> proxies;
  /// The worker runs, by id: which proxy follows each. Kept in step by (released) from the proxies.
  std::map<std::string, placed_run> placed;
  std::uint64_t refused_hellos = 0;  // for the log's rate limit
  static inline const char* name = "worker_registry";
};

/// The supervisor of workers (docs/architecture.md, "Actors"): it holds the worker_table (who may
/// join, the names, each worker's current connection and its hello) and one actor per worker
/// (worker_proxy.hpp), which owns that worker's status and heartbeat deadline and follows its
/// runs. It takes the agents' hellos from the bridge, answers a refused hello itself and has the
/// worker's actor welcome an accepted one, routes each further message to the worker's actor (the
/// agent's by its connection, the run actors' by run id), and passes the actors' word on which
/// workers' slots are open on to the run queue.
/// Protocol: worker_registry_actor in fwd.hpp. (wire_in, identity, hello | heartbeat |
/// run_update | run_done | outputs_reply | goodbye); (assign, assign_run, worker, run actor); (adopt, run
/// id, worker, run actor, cursor): a run the last server left running on a worker; (attach, run
/// queue); (stop, run id, interrupt); (drain, name, on) -> bool (false: no such worker); (enroll,
/// name) and (rekey, name) -> enrollment with a new credential (cdui.db keeps its hash);
/// (outputs, run id, worker) -> outputs_reply: a run's recorded outputs, asked of its worker;
/// (remove, name) -> enrollment: revokes it, disconnects the worker, ends its runs failed and has
/// the queue fail the runs waiting for it; (status) -> workers_status (GET /api/workers and its
/// part of /api/status, each worker as its actor says); (proxy_of, name) -> the worker's actor;
/// from the workers' actors: (released, run id, worker), (worker_update, ...), (worker_lost, name,
/// identity).
/// A worker's actor that dies (a kill, a bug) fails the runs it followed, with the reason, and
/// asks the agent to stop them; a fresh one takes the worker's connection from the table at once.
worker_registry_actor::behavior_type
worker_registry(worker_registry_actor::stateful_pointer<worker_registry_state> self,
                policy::worker_table::config cfg, std::shared_ptr<zmq_bridge> bridge,
                std::shared_ptr<storage::run_store> store, std::int64_t resume_grace_ms);

} // namespace cdui::actors
