#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/policy/worker_health.hpp"
#include "actors/policy/worker_table.hpp"
#include "actors/server/fwd.hpp"
#include "actors/server/zmq_bridge.hpp"

namespace cdui::actors {

/// A run a worker executes: the run's actor on this server, the last of the worker's event
/// cursors received (replays up to it are dropped), and, for a run the last server left running,
/// since when it waits for its worker to bring it back (0: not waiting).
struct remote_run {
  caf::actor run;
  std::uint64_t cursor = 0;
  std::int64_t adopting_since_ms = 0;
  /// The cursor a resend was last asked from, and when: one gap costs one request a second.
  std::optional<std::uint64_t> resend_asked;
  std::int64_t resend_asked_ms = 0;
  /// Asked to stop (interrupt or not): said again each time its worker joins, until it has ended.
  std::optional<bool> stop_asked{};
};

/// A request for a worker run's recorded outputs, waiting for the agent's answer.
struct pending_outputs {
  caf::typed_response_promise<outputs_reply> promise;
  std::int64_t asked_ms = 0;
};

/// How long the server waits for an agent to send a run's recorded outputs.
inline constexpr std::int64_t outputs_timeout_ms = 10000;

/// What a worker's actor starts with: its name, what its welcome says and how its status is
/// judged, and, for one that takes the place of an actor that died, the worker's connection as
/// the registry's worker_table has it. A worker that joins now, or only has runs to adopt, starts
/// without one: its hello (join) comes next, if at all.
struct worker_setup {
  std::string name;
  /// The ZeroMQ routing id of its current connection; empty: not connected.
  std::string identity;
  /// When the connection was lost (0: connected, or never seen since the start).
  std::int64_t disconnected_ms = 0;
  std::shared_ptr<zmq_bridge> bridge;
  worker_supervisor_actor registry;
  std::int64_t resume_grace_ms = 0;
  std::string server_version;
  policy::worker_health::settings health;
  /// The connection a replacement takes over (its identity is `identity`'s).
  std::optional<policy::worker_connection> joined;
};

/// How often a worker's actor looks at its heartbeat deadline, its runs' resume grace and its
/// outputs requests: a quarter of the heartbeat interval, so that a late worker is seen Degraded
/// before it is Disconnected; at most once a second, at least every 10 ms.
[[nodiscard]] std::int64_t worker_tick_ms(std::int64_t heartbeat_ms);

struct worker_proxy_state {
  worker_setup setup;
  /// Its status from its hello, heartbeats and drain; none until it says hello.
  std::optional<policy::worker_health> health;
  std::map<std::string, remote_run> runs;                              // by run id
  std::map<std::string, std::vector<pending_outputs>> outputs_waiting;  // by run id
  static inline const char* name = "worker";
};

/// One worker as the server sees it (docs/architecture.md, "Actors": worker_registry └── worker):
/// its connection, its status and heartbeat deadline (a policy::worker_health it ticks itself),
/// the runs it executes (their actors, cursors and adoptions) and its pending outputs requests. It
/// talks to its agent through the bridge; the registry routes it the agent's messages by
/// connection, an accepted hello (join) first. It tells the registry whether its slots admit runs
/// (worker_update, passed on to the run queue), when it gives its connection up (worker_lost: no
/// heartbeat for three intervals) and each run it lets go of (released). It ends with its
/// registry (it monitors it). Protocol: worker_proxy_actor in fwd.hpp.
worker_proxy_actor::behavior_type worker_proxy(worker_proxy_actor::stateful_pointer<worker_proxy_state> self,
                                               worker_setup setup);

} // namespace cdui::actors
