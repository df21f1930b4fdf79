#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/policy/study_spec.hpp"

namespace cdui::policy {

/// The epochs of ASHA's rung `k`: min_resource * reduction_factor^(min_early_stopping_rate + k).
[[nodiscard]] std::int64_t rung_resource(const asha_settings& settings, std::size_t k);

/// Asynchronous successive halving (Li et al. 2020, as Optuna's SuccessiveHalvingPruner decides)
/// for `trials[index]`, which has just reported `step`: at each rung that step reaches first, the
/// trial's value there (a trial's value at a rung is the one it reported at the first step at or
/// past the rung's epochs) is compared with every trial's that reached the rung, itself included;
/// it goes on when it is among the best floor(n / reduction_factor) of them (the best one, while
/// fewer than reduction_factor have), else it is pruned. The reason; empty: it goes on.
[[nodiscard]] std::string asha_prune(const asha_settings& settings, const std::string& metric, bool maximize,
                                     const std::vector<trial>& trials, std::size_t index, std::int64_t step);

} // namespace cdui::policy
