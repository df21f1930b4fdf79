#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/job.hpp"

namespace cdui::sim {

/// What became of one job in a replay.
struct job_outcome {
  enum class state {
    waiting,  // never started: still queued when nothing else could happen
    running,  // only while the replay goes on
    done,     // ran its whole duration
    oom,      // ran out of memory: its card's real use passed the card's memory (sim_options::oom)
    refused,  // the policy refused it (a budget larger than every card, a set no worker has)
  };
  state how = state::waiting;
  std::int64_t start = -1;
  std::int64_t end = -1;
  std::int64_t budget = 0;  // per card; 0: none (Exclusive)
  /// Its first card, in candidate order; -1 until it starts.
  std::int64_t card = -1;
};

/// A replay's figures for one policy (docs/benchmarks.md, "A cluster simulator").
struct summary {
  std::string policy;
  std::size_t jobs = 0;
  std::size_t done = 0;
  std::size_t oom = 0;
  /// Runs whose real peak is above their budget: under cdui's cap (the allocator held to the
  /// budget, docs/training-memory.md) each of these fails, whether or not its card is full.
  std::size_t over_budget = 0;
  std::size_t refused = 0;
  std::size_t never_started = 0;
  /// Time averages while the trace submits (first to last submit; the makespan when all come at
  /// once): the runs' real peaks over all cards' memory, and the share of cards with a run.
  double memory_used = 0;
  double cards_busy = 0;
  /// From submit to start, over the runs that started (seconds).
  std::int64_t wait_p50 = 0;
  std::int64_t wait_p99 = 0;
  std::int64_t makespan = 0;
  /// Device sets (jobs of 2 cards or more): how many, their waits, and how many never started.
  std::size_t sets = 0;
  std::int64_t set_wait_p50 = 0;
  std::int64_t set_wait_p99 = 0;
  std::int64_t set_wait_max = 0;
  std::size_t sets_never_started = 0;
  /// The policy's decisions (runs started, refused, and told by the ledger to wait) and the
  /// verdicts of single cards it asked for them.
  std::uint64_t decisions = 0;
  std::uint64_t card_verdicts = 0;
};

/// The q-quantile (0..1) of `values`, the nearest rank; 0 for none. Reorders `values`.
[[nodiscard]] std::int64_t quantile(std::vector<std::int64_t>& values, double q);

/// The figures of a replay from its jobs and outcomes; the time integrals over the submits (seconds
/// x bytes of peaks in use, seconds x busy cards) come from the replay.
[[nodiscard]] summary summarize(const std::string& policy, const trace& jobs,
                                const std::vector<job_outcome>& outcomes, double peak_byte_seconds,
                                double busy_card_seconds, std::int64_t memory, std::size_t cards);

} // namespace cdui::sim
