// The median pruner and ASHA (actors/policy/median_pruner.*, asha_pruner.*) on synthetic curves.

#include <boost/test/unit_test.hpp>

#include "actors/policy/asha_pruner.hpp"
#include "actors/policy/median_pruner.hpp"
#include "actors/policy/study_plan.hpp"

using namespace cdui;
using namespace cdui::policy;

namespace {

trial curve(std::uint64_t number, trial_state state, std::vector<double> values) {
  trial t;
  t.number = number;
  t.state = state;
  for (std::size_t i = 0; i < values.size(); ++i)
    t.intermediate[static_cast<std::int64_t>(i + 1)] = values[i];
  if (state == trial_state::complete && !values.empty())
    t.value = values.back();
  return t;
}

} // namespace

BOOST_AUTO_TEST_SUITE(study_pruner_test)

BOOST_AUTO_TEST_CASE(median_prunes_below_the_median_of_complete_trials_at_that_epoch) {
  median_settings m;  // Optuna's defaults: 5 startup trials, no warm-up
  std::vector<trial> trials;
  for (std::uint64_t i = 0; i < 5; ++i)
    trials.push_back(curve(i, trial_state::complete, {0.5 + 0.1 * i, 0.6 + 0.1 * i, 0.7}));
  // Epoch 1's values: 0.5 0.6 0.7 0.8 0.9, median 0.7.
  trials.push_back(curve(5, trial_state::running, {0.65}));
  auto why = median_prune(m, "val_accuracy", true, trials, 5, 1);
  BOOST_TEST(why == "pruned at epoch 1 by the median pruner: its best val_accuracy so far (0.65) is below the "
                    "median (0.7) of the 5 complete trials at that epoch");
  trials[5].intermediate[1] = 0.7;
  BOOST_TEST(median_prune(m, "val_accuracy", true, trials, 5, 1).empty());  // equal is kept
  // Minimizing: above the median is pruned.
  BOOST_TEST(median_prune(m, "val_loss", false, trials, 5, 1).empty());
  trials[5].intermediate[1] = 0.71;
  BOOST_TEST(!median_prune(m, "val_loss", false, trials, 5, 1).empty());
  // Its best so far counts, not its last: 0.9 at epoch 1, 0.6 at epoch 2 (median 0.8) goes on.
  trials[5].intermediate = {{1, 0.9}, {2, 0.6}};
  BOOST_TEST(median_prune(m, "val_accuracy", true, trials, 5, 2).empty());
}

BOOST_AUTO_TEST_CASE(median_waits_for_startup_trials_warmup_and_interval) {
  std::vector<trial> trials;
  for (std::uint64_t i = 0; i < 4; ++i)
    trials.push_back(curve(i, trial_state::complete, {0.9, 0.9, 0.9, 0.9}));
  trials.push_back(curve(4, trial_state::pruned, {0.9}));  // pruned trials are not complete ones
  trials.push_back(curve(5, trial_state::running, {0.1, 0.1, 0.1}));
  median_settings m;
  BOOST_TEST(median_prune(m, "acc", true, trials, 5, 1).empty());  // 4 complete < 5
  m.n_startup_trials = 4;
  BOOST_TEST(!median_prune(m, "acc", true, trials, 5, 1).empty());
  m.n_warmup_steps = 2;
  BOOST_TEST(median_prune(m, "acc", true, trials, 5, 1).empty());
  BOOST_TEST(!median_prune(m, "acc", true, trials, 5, 2).empty());
  m.interval_steps = 2;
  BOOST_TEST(median_prune(m, "acc", true, trials, 5, 3).empty());
  // No complete trial reached that epoch: nothing to compare with.
  m = median_settings{};
  m.n_startup_trials = 1;
  trials[5].intermediate[7] = 0.0;
  BOOST_TEST(median_prune(m, "acc", true, trials, 5, 7).empty());
}

BOOST_AUTO_TEST_CASE(asha_rungs_grow_by_the_reduction_factor) {
  asha_settings a;  // min_resource 1, reduction factor 3
  BOOST_TEST(rung_resource(a, 0) == 1);
  BOOST_TEST(rung_resource(a, 1) == 3);
  BOOST_TEST(rung_resource(a, 2) == 9);
  a.min_early_stopping_rate = 1;
  a.reduction_factor = 4;
  BOOST_TEST(rung_resource(a, 0) == 4);
}

BOOST_AUTO_TEST_CASE(asha_keeps_the_top_third_at_each_rung) {
  asha_settings a;
  std::vector<trial> trials;
  // Maximize; six trials reached epoch 1 before: 0.9 0.8 0.7 0.6 0.5 0.4.
  for (std::uint64_t i = 0; i < 6; ++i)
    trials.push_back(curve(i, i < 2 ? trial_state::running : trial_state::pruned, {0.9 - 0.1 * i}));
  // A seventh at epoch 1: 7 reached the rung, the best 7 / 3 = 2 go on (cut-off 0.8).
  trials.push_back(curve(6, trial_state::running, {0.85}));
  BOOST_TEST(asha_prune(a, "acc", true, trials, 6, 1).empty());
  trials[6].intermediate[1] = 0.75;
  BOOST_TEST(asha_prune(a, "acc", true, trials, 6, 1)
             == "pruned at epoch 1 by ASHA (rung 0 at 1 epochs, reduction factor 3): its acc (0.75) is not among "
                "the best 2 of the 7 trials that reached the rung (cut-off 0.8)");
  // Epoch 2 is no rung: nothing is decided there.
  trials[6].intermediate[2] = 0.1;
  BOOST_TEST(asha_prune(a, "acc", true, trials, 6, 2).empty());
  // Minimizing turns it round: 0.75 is among the lowest 2 of 0.4..0.9.
  trials[6].intermediate = {{1, 0.45}};
  BOOST_TEST(asha_prune(a, "loss", false, trials, 6, 1).empty());
}

BOOST_AUTO_TEST_CASE(asha_promotes_only_the_best_while_fewer_than_the_factor_reached_a_rung) {
  asha_settings a;
  std::vector<trial> trials{curve(0, trial_state::running, {0.6, 0.7, 0.8})};
  BOOST_TEST(asha_prune(a, "acc", true, trials, 0, 1).empty());  // the first is the best of one
  BOOST_TEST(asha_prune(a, "acc", true, trials, 0, 3).empty());
  trials.push_back(curve(1, trial_state::running, {0.7, 0.6, 0.5}));
  BOOST_TEST(asha_prune(a, "acc", true, trials, 1, 1).empty());  // better than 0.6 at rung 0
  BOOST_TEST(!asha_prune(a, "acc", true, trials, 1, 3).empty()); // worse than 0.8 at rung 1 (epoch 3)
}

BOOST_AUTO_TEST_CASE(the_study_dispatches_to_its_pruner_for_running_trials_only) {
  study_spec spec;
  spec.pruner = pruner_kind::none;
  sweep_objective objective{"acc", true};
  std::vector<trial> trials{curve(0, trial_state::running, {0.9}), curve(1, trial_state::running, {0.1})};
  BOOST_TEST(prune_reason(spec, objective, trials, 1, 1).empty());
  spec.pruner = pruner_kind::asha;
  BOOST_TEST(!prune_reason(spec, objective, trials, 1, 1).empty());
  trials[1].state = trial_state::complete;
  BOOST_TEST(prune_reason(spec, objective, trials, 1, 1).empty());
}

BOOST_AUTO_TEST_CASE(a_restart_reads_the_prune_step_back_from_either_pruners_reason) {
  asha_settings a;
  std::vector<trial> trials{curve(0, trial_state::running, {0.9, 0.9, 0.9}),
                            curve(1, trial_state::running, {0.1, 0.1, 0.1})};
  BOOST_TEST(pruned_step(asha_prune(a, "acc", true, trials, 1, 1)).value_or(-1) == 1);
  median_settings m;
  m.n_startup_trials = 1;
  trials[0].state = trial_state::complete;
  BOOST_TEST(pruned_step(median_prune(m, "acc", true, trials, 1, 3)).value_or(-1) == 3);
  BOOST_TEST(!pruned_step("cancelled while it was running"));
  BOOST_TEST(!pruned_step("pruned at epoch "));
  BOOST_TEST(!pruned_step("pruned at epoch 3x"));
}

BOOST_AUTO_TEST_SUITE_END()
