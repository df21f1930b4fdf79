#pragma once

#include <cstdint>
#include <vector>

#include "actors/policy/study_spec.hpp"

namespace cdui::policy {

/// The generator of trial `number` of a study seeded with `seed`: its own stream, so a trial's
/// draws do not depend on how many draws the trials before it took.
[[nodiscard]] sweep_random trial_random(std::uint64_t seed, std::uint64_t number);

/// Optuna's TPE (Bergstra et al. 2011, univariate as Optuna's default): the trials with a result
/// (complete ones by value, then pruned ones by how far they got and their last value) split into
/// the good gamma(n) = min(ceil(0.1 n), 25) and the rest; per param a Parzen estimator of each
/// (truncated normals on the param's scale around the observations and a prior, widths from the
/// neighbours, clipped; weights ramped down for old trials past 25; a list's values weighted with
/// the prior spread over them); n_ei_candidates draws from the good estimator, of which the one
/// with the largest log l(x) - log g(x) is taken. Before tpe.n_startup_trials trials have a
/// result, and for a study of no such trials, a random draw. The same trials and seed give the
/// same params on every machine (trial_random, no standard distribution).
[[nodiscard]] variant_params tpe_params(const study_spec& spec, bool maximize, const std::vector<trial>& trials,
                                        std::uint64_t number);

/// Every param drawn at random (sweep_spec's draws), from trial_random(seed, number).
[[nodiscard]] variant_params random_params(const study_spec& spec, std::uint64_t number);

} // namespace cdui::policy
