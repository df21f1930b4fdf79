#pragma once
// A run supervisor's DDP ranks (actors/agent/run_supervisor.*, docs/ddp.md): which ranks a launch
// starts on this worker, the ddp_rank actors of the ranks besides the run's process, and, on rank
// 0's worker of a run across workers, the ranks that wait for rank 0's store. Internal to the
// supervisor.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/agent/ddp_rank.hpp"
#include "actors/agent/run_supervisor.hpp"

namespace cdui::actors::supervisor_ddp {

using self_ptr = run_supervisor_actor::stateful_pointer<supervisor_state>;

/// The ranks a launch starts on this worker: the run's process is rank `first` of `world`, and
/// `others` are the worker's other ranks (ddp_rank actors). Within one worker, rank 0 and 1..N-1.
struct rank_plan {
  int world = 1;  // 1: one process
  int first = 0;
  std::vector<int> others;
  /// Across workers: run.json's ddp object (docs/ddp.md); null within one worker.
  nlohmann::json run_json;
  /// On rank 0's worker of a run across workers: `others` start once rank 0 has said where its
  /// store listens.
  bool wait_for_store = false;
  /// Set when the assignment's part makes no ranks here: why (the run fails with it).
  std::string refused;
};

/// For `run` on `cards` of this worker's cards; rank 0's store goes to `rendezvous_host`.
[[nodiscard]] rank_plan plan_ranks(const assign_run& run, std::size_t cards, const std::string& rendezvous_host);

/// Spawns the ddp_rank of one of the run's other ranks.
void watch_rank(self_ptr self, ddp_rank_setup setup);

/// Kills (SIGKILL) every other rank still running: their ends are no failure of theirs.
void kill_ranks(self_ptr self);

/// Rank k has exited: the first that failed ends the run's process and the others, and the run
/// fails with its error.
void rank_ended(self_ptr self, int k, const std::string& failure);

/// Keeps, in ranks-waiting.json in the run's folder (0600: their environment holds the run's
/// secret), the ranks `others` that wait for rank 0's store and their environment, for an agent
/// that restarts before they start.
void keep_waiting_ranks(self_ptr self, const std::vector<int>& others, const std::map<std::string, std::string>& env);

/// Starts the ranks waiting for rank 0's store once its ddp_rendezvous event is in events.jsonl,
/// with its port written into run.json (and ranks-waiting.json removed).
void start_waiting_ranks(self_ptr self);

/// A run an earlier agent process left: its other ranks, by run.json and their pid files, and the
/// ranks that still wait for rank 0's store (ranks-waiting.json).
void find_ranks(self_ptr self);

/// The file its process writes its outcome to: outcome.json, or outcome-rank<k>.json when it is
/// rank k > 0 of a run across workers.
[[nodiscard]] std::string outcome_file(const supervisor_state& st);

/// The outcome of this worker's part from its process's: a part whose rank k > 0 failed says so,
/// naming the rank and the worker, as a failed rank of any worker does.
[[nodiscard]] run_outcome part_outcome(const supervisor_state& st, run_outcome outcome);

/// The run's end from its process's outcome (part_outcome'd): killed at its stop deadline, it
/// says so; else a rank's failure is the run's, unless it came after the process had failed
/// (the process's error is the cause, the rank only lost it).
[[nodiscard]] run_outcome run_end(const supervisor_state& st, run_outcome process);

} // namespace cdui::actors::supervisor_ddp
