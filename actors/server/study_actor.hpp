#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "actors/policy/study_plan.hpp"
#include "actors/server/fwd.hpp"
#include "messages/study.hpp"
#include "storage/run_store.hpp"

namespace cdui::actors {

struct study_actor_state {
  study_record study;
  policy::study_spec spec;
  policy::sweep_objective objective;
  /// What every trial's run shares: the graph, the options, the study's name.
  run_request base;
  run_queue_actor queue;
  std::shared_ptr<storage::run_store> store;
  /// By number, with each one's run and the last event cursor read of it.
  std::vector<policy::trial> trials;
  std::vector<std::string> runs;
  std::vector<std::uint64_t> cursors;
  /// The step each trial's prune was decided at (nullopt: none was). What it reports after that is
  /// not the study's: an Optuna trial stops at its prune, while a run goes on until the cancel
  /// reaches it, and its later values would stand at rungs it never passed.
  std::vector<std::optional<std::int64_t>> pruned_at;
  /// Trial submits on their way to the queue: a new trial is proposed only when none is, so
  /// numbers are given in order and never twice (a rerun of an interrupted one may be on its way).
  std::size_t submitting = 0;
  /// A trial the queue could not take for now (its store could not record it: a full disk), with
  /// its params: submitted again at the next (tick). It counts in `submitting` meanwhile.
  std::optional<std::pair<std::size_t, policy::variant_params>> resubmit;
  /// Some trial's run was refused: no more are proposed.
  bool refused = false;
  static inline const char* name = "study";
};

/// One study (issue 16, "Studies"): keeps budget.max_parallel trials queued or running through the
/// run queue (each recorded with its run in cdui.db before it is queued: `trial`), follows each
/// trial's events (the queue's `events` long poll) for its objective's metric per epoch, asks the
/// pruner after each and prunes a trial that falls behind (the queue's cancel with a reason: the
/// run ends `pruned`), proposes the next trial from the sampler when one ends, and writes the
/// study's final state and quits when the budget's trials have all ended. Spawned after a submit
/// recorded trial 0, and at a restart for each active study: its trials come back from cdui.db
/// (their metrics from the stored events), and a trial whose run the restart interrupted runs
/// again under its number, so none is lost or repeated. (cancel): recorded, no more trials, each
/// unfinished one cancelled.
study_actor::behavior_type study_supervisor(study_actor::stateful_pointer<study_actor_state> self,
                                            study_record study, run_queue_actor queue,
                                            std::shared_ptr<storage::run_store> store);

/// A trial's params ({"node.param": value} JSON text) in the space's order.
[[nodiscard]] policy::variant_params trial_params(const policy::study_spec& spec, const std::string& params_json);

} // namespace cdui::actors
