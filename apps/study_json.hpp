#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/study.hpp"

namespace cdui::apps {

/// A trial as GET shows it: as stored, with its objective's values by epoch (from its run's
/// metric points).
struct trial_view {
  study_trial trial;
  std::map<std::int64_t, double> intermediate;
};

/// GET /api/studies/{id}: the study (name, state, space, objective, budget, sampler, pruner,
/// seed), its trials counted by status, each trial in number order (number, run_id, status,
/// params, intermediate_values {epoch: value}, value, epochs, error: a pruned trial's reason,
/// queue_key), the best complete trial, and the epochs its trials trained in all.
[[nodiscard]] nlohmann::json study_json(const study_record& study, const std::vector<trial_view>& trials);

/// GET /api/studies: one study's line, without its trials.
[[nodiscard]] nlohmann::json study_summary_json(const study_record& study, const std::vector<trial_view>& trials);

/// `cdui study`'s table of a GET /api/studies/{id} answer: TRIAL, RUN, STATUS, each param, the
/// objective's last value, EPOCHS, in number order.
[[nodiscard]] std::string study_table(const nlohmann::json& study);

} // namespace cdui::apps
