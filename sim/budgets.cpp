#include "sim/budgets.hpp"

#include <cmath>

#include "actors/policy/memory_budget.hpp"
#include "actors/policy/sweep_spec.hpp"
#include "messages/run_request.hpp"

namespace cdui::sim {

namespace {

constexpr auto gib = static_cast<std::int64_t>(bytes_per_gib);

/// A draw in [-1, 1) of job `index`: SplitMix64 seeded by the seed and the index, the same on
/// every machine.
double spread(std::uint64_t seed, std::size_t index) {
  policy::sweep_random rng{seed ^ (0x9E3779B97F4A7C15ULL * (index + 1))};
  return rng.uniform() * 2 - 1;
}

std::int64_t off_by(std::int64_t bytes, double fraction) {
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(bytes) * (1 + fraction)));
}

} // namespace

std::vector<policy_spec> standard_policies() {
  return {{"exclusive", sharing::exclusive, budget_rule::none, 0},
          {"typed", sharing::by_memory, budget_rule::typed, 0},
          {"measured", sharing::by_memory, budget_rule::measured, measured_peak_spread},
          {"estimate10", sharing::by_memory, budget_rule::estimate, 0.10},
          {"estimate30", sharing::by_memory, budget_rule::estimate, 0.30}};
}

std::optional<policy_spec> policy_named(const std::string& name) {
  for (auto& p : standard_policies())
    if (p.name == name)
      return p;
  return std::nullopt;
}

std::int64_t budget_of(const job& j, std::size_t index, const policy_spec& policy, std::uint64_t seed) {
  using policy::budget_source;
  std::variant<policy::run_budget, std::string> settled;
  switch (policy.budget) {
  case budget_rule::none:
    return 0;
  case budget_rule::typed:
    settled = policy::resolve_budget(j.typed > 0 ? j.typed : (j.peak + gib - 1) / gib * gib,
                                     budget_source::typed, std::nullopt);
    break;
  case budget_rule::measured:
    settled = policy::resolve_budget(
      std::nullopt, budget_source::measured,
      policy::measured_peak{off_by(j.peak, policy.error * spread(seed, index)), "an earlier run"});
    break;
  case budget_rule::estimate:
    settled = policy::resolve_budget(off_by(j.peak, policy.error * spread(seed, index)),
                                     budget_source::estimate, std::nullopt);
    break;
  }
  return std::get<policy::run_budget>(settled).bytes;
}

} // namespace cdui::sim
