#pragma once

#include <chrono>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/agent/ddp_rank.hpp"
#include "actors/agent/protocol.hpp"
#include "actors/common/deadlines.hpp"
#include "actors/policy/launch_plan.hpp"
#include "messages/run_outcome.hpp"
#include "messages/worker.hpp"

namespace cdui::actors {

/// A run to start: what the server sent, and how the worker starts it.
struct run_launch {
  assign_run run;
  policy::launch_plan plan;
};

/// What a run supervisor starts with.
struct supervisor_setup {
  std::string run_id;
  /// The worker's name, for the log and the run's errors.
  std::string worker;
  /// The run's folder on the worker: <home>/agents/<worker>/runs/<id>.
  std::filesystem::path dir;
  /// A new run, to start from its plan; none: a run an earlier agent process left in `dir`.
  std::optional<run_launch> launch;
  /// The `cdui` binary that runs `exec RUNDIR`.
  std::filesystem::path exec_binary;
  /// The connection to report on (empty: not welcomed yet).
  wire_link link;
  agent_actor agent;
  /// Takes over from a supervisor of this run that died (for the log).
  bool after_failure = false;
  /// Where rank 0 of a DDP run across workers hosts the ranks' store (agent::config).
  std::string rendezvous_host = "127.0.0.1";
  /// How long a run asked to stop (or forgotten) has before it is killed (agent_setup).
  std::int64_t stop_deadline_ms = default_stop_deadline_ms;
};

struct supervisor_state {
  supervisor_setup setup;
  wire_link link;
  int pid = -1;
  /// False for a run an earlier agent process started: not our child, watched through /proc.
  bool child = true;
  /// How much of events.jsonl was sent: bytes read, and the last event cursor sent.
  std::uint64_t sent_bytes = 0;
  std::uint64_t sent_cursor = 0;
  /// Set once its process has ended; kept until the server acknowledges it (run_ack).
  std::optional<run_outcome> ended;
  /// Whether run_done went out since the last (re)connect; it follows the run's last event.
  bool end_sent = false;
  /// The server no longer follows it: stop it, report nothing.
  bool forgotten = false;
  /// A run trained with DDP: the ddp_rank of each other rank, how many of them have not ended,
  /// the first rank's failure, and whether rank 0 (the run's process) has exited, with its wait
  /// status; the run ends once every rank has.
  std::vector<ddp_rank_actor> ranks;
  std::size_t ranks_running = 0;
  std::optional<std::string> rank_failure;
  bool process_ended = false;
  int process_status = 0;
  /// Whether rank_failure came after the run's process had exited (a rank that lost it), and
  /// whether this supervisor killed the ranks itself (what they say after that is no failure).
  bool rank_failure_after_exit = false;
  bool ranks_killed = false;
  /// After rank 0 has exited, how long the other ranks have to exit on their own.
  std::optional<std::chrono::steady_clock::time_point> ranks_deadline;
  /// Asked to stop (interrupted or cancelled): the process and its ranks are killed if they have
  /// not ended by then, and the run ends `killed_at_stop` (set then).
  std::optional<std::chrono::steady_clock::time_point> stop_deadline;
  bool stop_interrupts = false;
  std::optional<run_outcome> killed_at_stop;
  /// The rank of the run's process and the run's ranks: 0 and 1 for a run of one process; across
  /// workers, this worker's first rank (docs/ddp.md, "Across workers").
  int first_rank = 0;
  int world = 1;
  /// On rank 0's worker of a run across workers: the other ranks here, until rank 0's store is up.
  std::vector<ddp_rank_setup> waiting_ranks;
  static inline const char* name = "run_supervisor";
};

/// The most events one run_update carries, so that a replay is many messages, not one huge one.
inline constexpr std::size_t max_events_per_update = 500;

/// One run on the worker (docs/architecture.md, "Actors", agent side): starts its `cdui exec RUNDIR` process
/// from the launch plan (or takes over one an earlier agent left), follows its events.jsonl and
/// sends the new whole lines as run_update while linked, then run_done from outcome.json once the
/// process has ended, again after each reconnect until the server acknowledges it. Quits normally
/// when the run is acknowledged or forgotten, and on (quit), leaving the process to run on. Its
/// handlers are not guarded: a supervisor that fails dies, and the agent, which monitors it, fails
/// the run and stops its process. A DDP run's other ranks are ddp_rank actors it spawns: the first
/// that fails ends the others and rank 0, and fails the run with its error; the run ends once
/// every rank has exited. Protocol: see actors/agent/protocol.hpp.
run_supervisor_actor::behavior_type run_supervisor(run_supervisor_actor::stateful_pointer<supervisor_state> self,
                                                   supervisor_setup setup);

/// Whether the `cdui exec` of the run folder `dir` is still running as `pid` (it may be an earlier
/// agent's child, which waitpid cannot watch).
[[nodiscard]] bool run_process_alive(int pid, const std::filesystem::path& dir);

/// Kills (SIGKILL) and reaps the process `pid` of the run folder `dir` if it still runs: this
/// process's child (also one that has not exec'd yet) or an earlier agent's (run_process_alive).
/// Whether it ran.
bool stop_run_process(int pid, const std::filesystem::path& dir);

/// The pid in the run folder's exec.pid (`file`: a DDP rank's, ddp_rank_pid_file) (-1 when there
/// is none).
[[nodiscard]] int run_process_pid(const std::filesystem::path& dir, const std::string& file = "exec.pid");

} // namespace cdui::actors
