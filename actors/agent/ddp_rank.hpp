#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <sys/types.h>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/agent/protocol.hpp"
#include "messages/run_outcome.hpp"

namespace cdui::actors {

/// How many ranks a run of `graph_json` on `cards` cards has: the cards, when a TrainingLoop of
/// the graph trains with strategy ddp and there are two or more; else 1 (one process).
[[nodiscard]] int ddp_world_size(const std::string& graph_json, std::size_t cards);

/// Why rank `k` of `world` failed the run, from how its process ended: its outcome (none when it
/// wrote none) and, for none, `exit_reason`; nullopt when it succeeded or was stopped. `worker`
/// (a run across workers): the worker it ran on, which the sentence names.
[[nodiscard]] std::optional<std::string> ddp_rank_failure(int k, int world, const std::optional<run_outcome>& outcome,
                                                          const std::string& exit_reason,
                                                          const std::string& worker = "");

/// The file in the run's folder that holds rank k's pid: exec-rank<k>.pid.
[[nodiscard]] std::string ddp_rank_pid_file(int k);

/// What a ddp_rank starts with.
struct ddp_rank_setup {
  int k = 1;
  int world = 2;
  /// The run's folder; the rank's pid goes to exec-rank<k>.pid, its outcome is outcome-rank<k>.json.
  std::filesystem::path dir;
  /// The `cdui` binary and the environment to start `exec DIR --rank K --world-size N` with; no
  /// binary: the rank an earlier agent process started (its pid file), watched through /proc.
  std::optional<std::filesystem::path> binary;
  std::map<std::string, std::string> env;
  run_supervisor_actor supervisor;
  /// A run across workers: this worker's name, for the rank's failure; empty otherwise.
  std::string worker;
};

struct ddp_rank_state {
  ddp_rank_setup setup;
  pid_t pid = -1;
  /// False for a rank an earlier agent process started: not our child.
  bool child = true;
  static inline const char* name = "ddp_rank";
};

/// One rank k > 0 of a run trained with DDP (docs/ddp.md, "How the agent runs it"), under
/// the run's supervisor (rank 0 is the run's own process): starts its process (or finds an earlier
/// agent's), watches it and, once it has exited, tells the supervisor (rank_ended, k, failure:
/// empty when it succeeded) and quits. (signal, sig) sends its process a signal. Linked to the
/// supervisor: when either dies of an error, the rank's process is killed (no rank outlives a run
/// its agent gave up) and the supervisor's death fails the run; when the supervisor quits normally
/// (the agent stops), the rank's process runs on and the next agent finds it. Protocol: see actors/agent/protocol.hpp.
ddp_rank_actor::behavior_type ddp_rank(ddp_rank_actor::stateful_pointer<ddp_rank_state> self,
                                       ddp_rank_setup setup);

} // namespace cdui::actors
