#include "actors/policy/asha_pruner.hpp"

#include <algorithm>
#include <limits>
#include <optional>


namespace cdui::policy {

namespace {

/// A trial's value at a rung: the one it reported at the first step at or past the rung's epochs.
std::optional<std::pair<std::int64_t, double>> at_rung(const trial& t, std::int64_t resource) {
  auto i = t.intermediate.lower_bound(resource);
  if (i == t.intermediate.end())
    return std::nullopt;
  return *i;
}

} // namespace

std::int64_t rung_resource(const asha_settings& settings, std::size_t k) {
  std::int64_t r = settings.min_resource;
  for (std::uint64_t i = 0; i < settings.min_early_stopping_rate + k; ++i) {
    if (r > std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(settings.reduction_factor))
      return std::numeric_limits<std::int64_t>::max();
    r *= static_cast<std::int64_t>(settings.reduction_factor);
  }
  return r;
}

std::string asha_prune(const asha_settings& settings, const std::string& metric, bool maximize,
                       const std::vector<trial>& trials, std::size_t index, std::int64_t step) {
  const auto& mine = trials.at(index);
  for (std::size_t k = 0;; ++k) {
    auto resource = rung_resource(settings, k);
    if (resource > step)
      return "";
    auto reached = at_rung(mine, resource);
    if (!reached || reached->first != step)
      continue;  // decided at an earlier report
    std::vector<double> competing;
    for (const auto& t : trials)
      if (auto v = at_rung(t, resource))
        competing.push_back(v->second);
    std::sort(competing.begin(), competing.end(), [&](double a, double b) { return maximize ? a > b : a < b; });
    auto keep = std::max<std::size_t>(competing.size() / settings.reduction_factor, 1);
    double cutoff = competing[keep - 1];
    double value = reached->second;
    if (maximize ? value >= cutoff : value <= cutoff)
      continue;
    return "pruned at epoch " + std::to_string(step) + " by ASHA (rung " + std::to_string(k) + " at "
           + std::to_string(resource) + " epochs, reduction factor " + std::to_string(settings.reduction_factor)
           + "): its " + metric + " (" + value_text(value) + ") is not among the best "
           + std::to_string(keep) + " of the " + std::to_string(competing.size())
           + " trials that reached the rung (cut-off " + value_text(cutoff) + ")";
  }
}

} // namespace cdui::policy
