#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/policy/study_spec.hpp"

namespace cdui::policy {

/// Optuna's median pruner for `trials[index]`, which has just reported `step`: once
/// n_startup_trials trials are complete, at a step past n_warmup_steps on the interval, the trial
/// is pruned when its best value so far is worse than the median of the complete trials' values at
/// that step. The reason, for the pruned run's error; empty: it goes on.
[[nodiscard]] std::string median_prune(const median_settings& settings, const std::string& metric, bool maximize,
                                       const std::vector<trial>& trials, std::size_t index, std::int64_t step);

} // namespace cdui::policy
