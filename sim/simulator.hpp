#pragma once

#include <cstdint>
#include <cstddef>
#include <memory>
#include <vector>

#include "sim/budgets.hpp"
#include "sim/cluster.hpp"
#include "sim/job.hpp"
#include "sim/outcome.hpp"

namespace cdui::sim {

/// What a replay models beyond the cluster and the policy (docs/benchmarks.md, "What the
/// simulator does not model").
struct sim_options {
  /// What each run holds on each of its cards besides its budget, which the ledger counts too
  /// (CODEFYUI_EXECUTION_CUDA_CONTEXT_MIB, 768 MiB by default on CUDA).
  std::int64_t context_bytes = 768LL << 20;
  /// A device set names a worker (target.worker and target.devices, the worker chosen round
  /// robin, the set a block of its cards): it waits in those cards' queues, reserving them. Else
  /// it is for any worker (target.worker "any"), which cdui places only on a worker whose whole
  /// set is free by count and not shared by memory (policy::free_slots).
  bool sets_named = true;
  /// Each card's free figure is its memory less what its runs really hold, as a heartbeat right
  /// after every start and end would report it; else always the whole card.
  bool free_from_usage = true;
  /// card_full: a run whose real peak is above its budget fails only when its card's real use
  /// passes the card's memory (the newest such run on the card first, until it fits again);
  /// cap: it fails at its start, as cdui's allocator cap (held to the budget) does.
  enum class oom_rule { card_full, cap };
  oom_rule oom = oom_rule::card_full;
  /// Places runs for any worker as the run queue does, literally: policy::free_slots over every
  /// worker and the ledger over every idle shared card, each floating run at each pump (slow at
  /// scale: docs/benchmarks.md); else through the simulator's index, which gives the same schedule.
  bool literal = false;
  /// Seeds the budgets' errors (budget_of).
  std::uint64_t seed = 1;
};

/// A discrete-event replay of a trace on a cluster under one policy, driving the real scheduling
/// policy (actors/policy/: admission, free_slots, card_groups, card_ledger, decide, place_later,
/// resolve_budget) as the run queue and the memory ledger drive it, with simulated time: no actor,
/// thread, clock or socket. Every message is answered at once. The same inputs give the same
/// schedule.
class simulator {
public:
  simulator(const cluster_spec& cluster, const policy_spec& policy, sim_options options = {});
  ~simulator();
  simulator(const simulator&) = delete;
  simulator& operator=(const simulator&) = delete;

  /// Schedules the jobs' submits (once; the trace in arrival order).
  void load(const trace& jobs);
  /// Handles the next event (a submit or a run's end) and everything it lets start; false when
  /// none is left.
  bool step();
  /// Steps until no event is left.
  void run();

  /// The time of the last event handled (seconds).
  [[nodiscard]] std::int64_t now() const;
  /// Runs queued (floating or in a card's queue) and running now.
  [[nodiscard]] std::size_t queued() const;
  [[nodiscard]] std::size_t running() const;
  [[nodiscard]] const std::vector<job_outcome>& outcomes() const;
  [[nodiscard]] summary result() const;

  /// One pass of the run queue's place_floating as it is written (policy::free_slots over every
  /// worker, the ledger over every idle shared card) over the oldest `most` floating runs, each
  /// asked as after memory freed, whatever `literal` says; what it places starts as in a pump. For
  /// the benchmark of the policy as the run queue drives it at scale. Returns the runs it placed
  /// or refused.
  std::size_t literal_pass(std::size_t most = SIZE_MAX);

private:
  struct state;
  std::unique_ptr<state> st_;
};

} // namespace cdui::sim
