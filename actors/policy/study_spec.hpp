#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/policy/run_options.hpp"
#include "actors/policy/sweep_spec.hpp"
#include "messages/run_request.hpp"

namespace cdui::policy {

/// TPE's settings, Optuna's TPESampler defaults: random draws until 10 trials have a result,
/// 24 candidates drawn from the good trials' estimator, the prior's weight 1.0.
struct tpe_settings {
  std::uint64_t n_startup_trials = 10;
  std::uint64_t n_ei_candidates = 24;
  double prior_weight = 1.0;
};

/// The median pruner's settings, Optuna's MedianPruner defaults: no pruning before 5 trials have
/// completed, from epoch 0 on, at every epoch.
struct median_settings {
  std::uint64_t n_startup_trials = 5;
  std::int64_t n_warmup_steps = 0;
  std::int64_t interval_steps = 1;
};

/// ASHA's settings: rungs at min_resource * reduction_factor^(min_early_stopping_rate + k) epochs
/// (1, 3, 9, 27, ...). The reduction factor is the ASHA paper's 3 (Optuna and Ray Tune use 4):
/// short studies over a few epochs get a rung at epoch 3 rather than 4.
struct asha_settings {
  std::int64_t min_resource = 1;
  std::uint64_t reduction_factor = 3;
  std::uint64_t min_early_stopping_rate = 0;
};

enum class sampler_kind { random, tpe };
enum class pruner_kind { none, median, asha };

/// A study's search: its space (a sweep's params), its budget, how it samples and prunes, and its
/// seed (drawn and kept at the submit when not given).
struct study_spec {
  std::vector<sweep_param> space;
  std::uint64_t trials = 0;
  std::uint64_t max_parallel = 1;
  sampler_kind sampler = sampler_kind::tpe;
  tpe_settings tpe;
  pruner_kind pruner = pruner_kind::median;
  median_settings median;
  asha_settings asha;
  bool has_seed = false;
  std::uint64_t seed = 0;
};

/// Reads a study's search from an object with space, budget, sampler?, pruner?, seed? (a POST
/// /api/studies body or what cdui.db keeps); the refusal names the field (`budget.trials: ...`).
[[nodiscard]] std::variant<study_spec, std::string> parse_study_spec(const nlohmann::json& j);

/// The spec as parse_study_spec reads it back, every setting written out.
[[nodiscard]] nlohmann::json study_spec_json(const study_spec& spec);

/// A POST /api/studies body, read: what every trial's run shares, the search and the objective
/// (the metric each epoch reports, e.g. val_accuracy, and its direction).
struct study_request {
  run_request base;
  study_spec spec;
  sweep_objective objective;
};

/// Reads {graph, name?, space, objective, budget, sampler?, pruner?, seed?, options?}; the refusal
/// names the field, as a sweep's does.
[[nodiscard]] std::variant<study_request, submission_error> parse_study_body(const nlohmann::json& body);

/// Where a trial stands: running (its run is queued or running), complete (its run succeeded),
/// pruned, or failed (its run failed or was cancelled).
enum class trial_state { running, complete, pruned, failed };

[[nodiscard]] const char* to_string(trial_state s);
/// A run's status as its trial's state; interrupted counts as running: a restart runs it again.
[[nodiscard]] trial_state trial_state_of(run_status status);

/// One trial as the samplers and pruners see it.
struct trial {
  std::uint64_t number = 0;
  variant_params params;
  trial_state state = trial_state::running;
  /// The objective's metric by step (the epoch), as the run reported it.
  std::map<std::int64_t, double> intermediate;
  /// A complete trial's result: its last reported value, else the metric in its final metrics.
  std::optional<double> value;
};

/// A metric's value as reasons and tables write it: 4 significant digits ("0.8625").
[[nodiscard]] std::string value_text(double x);

} // namespace cdui::policy
