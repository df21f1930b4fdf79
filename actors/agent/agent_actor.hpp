#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/agent/protocol.hpp"
#include "actors/common/curve_keys.hpp"
#include "actors/common/deadlines.hpp"
#include "actors/common/zmq_socket_thread.hpp"
#include "messages/worker.hpp"

namespace cdui::actors {

/// Everything the agent actor starts with; cdui::agent checks and fills it in.
struct agent_setup {
  std::string name;
  /// The home: the server's files (same host), and agents/<name>/runs/ for the runs.
  std::filesystem::path home;
  /// What it offers; the first is the CPU, whose free memory each heartbeat measures again.
  std::vector<device_offer> offers;
  /// What the hello's env_digest digests (libtorch, CUDA).
  std::string environment;
  bool one_shot = false;
  /// Its machine leaves with it (agent::config::ephemeral).
  bool ephemeral = false;
  /// Where a DDP run's rank 0 on this worker hosts the ranks' store (agent::config).
  std::string rendezvous_host = "127.0.0.1";
  /// How long a run asked to stop, or forgotten by the server, has to end before its processes are
  /// killed (CODEFYUI_STOP_DEADLINE_S in the agent's environment).
  std::int64_t stop_deadline_ms = default_stop_deadline_ms;
  /// A remote server, tcp://HOST:PORT; empty: the server of `home` (server.json).
  std::string server;
  /// The server's CURVE public key; empty: server.json's, if any.
  std::string server_key;
  /// The file holding its enrolled credential (first line); empty: the session token of `home`.
  std::filesystem::path credential_file;
  /// What runs `exec RUNDIR` for each run.
  std::filesystem::path exec_binary = "/proc/self/exe";
  /// Called on each welcome (agent::config::on_joined); may be empty.
  std::function<void()> on_joined;
  /// Told (ended, reason, refused) just before the agent quits: refused with the server's reason,
  /// or not (stopped, or a one-shot agent whose run has ended).
  caf::actor owner;
};

/// Where the agent connects: the endpoint and, for an encrypted wire, the server's public key.
struct server_contact {
  std::string endpoint;
  std::string public_key;
  bool operator!=(const server_contact& o) const {
    return endpoint != o.endpoint || public_key != o.public_key;
  }
};

/// A run the agent holds: its supervisor, until the server has acknowledged or forgotten it.
struct agent_run {
  run_supervisor_actor supervisor;
  std::filesystem::path dir;
  /// Until its supervisor says the process has ended.
  bool executing = true;
  /// Supervisors of this run that died; after max_supervisor_failures the run is given up.
  int failures = 0;
  /// The server no longer follows it: it is being stopped (killed at the stop deadline, if need
  /// be).
  bool forgotten = false;
  /// Its cards, as assigned; empty for a run an earlier agent process left (taken to hold any).
  std::vector<std::string> devices;
};

struct agent_state {
  agent_setup setup;
  /// The connection; its number tags what its thread receives, so that a replaced connection's
  /// last messages are told apart.
  std::shared_ptr<zmq_socket_thread> socket;
  std::uint64_t connection = 0;
  server_contact contact;
  /// This process's own CURVE keys, for a server that encrypts its wire.
  curve_keys own_keys;
  bool welcomed = false;
  bool hinted = false;
  std::chrono::milliseconds heartbeat_every{10'000};
  std::chrono::steady_clock::time_point connected_at;
  std::chrono::steady_clock::time_point last_hello;
  std::chrono::steady_clock::time_point last_heartbeat;
  std::chrono::steady_clock::time_point last_endpoint_check;
  std::map<std::string, agent_run> runs;
  /// Runs assigned while a forgotten run was still being stopped: they start once none is, so
  /// that no run gets a card the forgotten one's processes may still hold.
  std::vector<assign_run> held;
  /// A one-shot agent that has been given its run: it ends once it holds no run.
  bool had_run = false;
  /// It has said goodbye and waits for the server's (or its deadline) to end.
  bool leaving = false;
  static inline const char* name = "agent";
};

/// How many supervisors of one run may die: the first death starts a new one, which reports the
/// run failed from its folder; after the second the agent reports the failure itself.
inline constexpr int max_supervisor_failures = 2;

/// The worker agent's connection (docs/architecture.md, "Actors", agent side): finds its server, says hello
/// until welcomed, sends heartbeats, reconnects when the server's endpoint or key changes, and
/// turns each message from the server into a message to the run's supervisor (one
/// run_supervisor per run, which it spawns and monitors). A supervisor that dies fails its run:
/// the run's process is stopped (SIGKILL) and the run ends failed with the reason. Protocol: see
/// actors/agent/protocol.hpp; from the server, (wire_in, connection, struct) for welcome,
/// assign_run, run_cursor (resend), run_ack, outputs_request, stop_run, refused and goodbye (its
/// own goodbye heard: a stopping agent that said it ends then, or after a second).
agent_actor::behavior_type agent_connection(agent_actor::stateful_pointer<agent_state> self,
                                            agent_setup setup);

/// This machine's hostname ("worker" when it has none): an agent's default name.
[[nodiscard]] std::string this_host_name();

/// The CPU as this host has it now: RAM from sysinfo, uuid cpu-<hostname>.
[[nodiscard]] device_offer this_host_cpu_offer();

} // namespace cdui::actors
