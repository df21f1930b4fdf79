#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/policy/study_spec.hpp"
#include "actors/policy/sweep_ranking.hpp"

namespace cdui::policy {

/// How many trials a study starts now: enough to have max_parallel running, never past its budget,
/// none once it was asked to stop.
[[nodiscard]] std::size_t trials_to_start(const study_spec& spec, const std::vector<trial>& trials, bool cancel_asked);

/// The params of trial `number`, from the study's sampler (random, or TPE over `trials`).
[[nodiscard]] variant_params propose(const study_spec& spec, bool maximize, const std::vector<trial>& trials,
                                     std::uint64_t number);

/// The pruner's decision for running `trials[index]`, which has just reported `step`: the reason
/// it is pruned, or empty.
[[nodiscard]] std::string prune_reason(const study_spec& spec, const sweep_objective& objective,
                                       const std::vector<trial>& trials, std::size_t index, std::int64_t step);

/// The step a prune reason names: both pruners begin theirs "pruned at epoch N ", which a restart
/// reads back from the run's error. nullopt for any other text.
[[nodiscard]] std::optional<std::int64_t> pruned_step(const std::string& reason);

/// The best complete trial with a value (the first of equals); nullopt while there is none.
[[nodiscard]] std::optional<std::size_t> best_trial(const std::vector<trial>& trials, bool maximize);

/// A study as a whole: queued (nothing has started), running, cancelling, or finished (every trial
/// of the budget ended, one at least complete), failed (none complete) or cancelled.
[[nodiscard]] sweep_state study_state(const study_spec& spec, const std::vector<trial>& trials, bool cancel_asked,
                                      bool started);

/// The objective's point in a metric event's data {node, name, step, value}: `metric` as "name"
/// or "node.name". nullopt for another metric, or one without a finite value.
[[nodiscard]] std::optional<std::pair<std::int64_t, double>> objective_point(const nlohmann::json& data,
                                                                            const std::string& metric);

/// A trial's result: its last reported value, else the metric (or "final_<metric>") in its final
/// metrics, as a sweep reads them.
[[nodiscard]] std::optional<double> trial_value(const trial& t, const std::string& final_metrics,
                                                const std::string& metric);

} // namespace cdui::policy
