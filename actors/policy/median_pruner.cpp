#include "actors/policy/median_pruner.hpp"

#include <algorithm>
#include <cmath>


namespace cdui::policy {

namespace {

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  auto n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

} // namespace

std::string median_prune(const median_settings& settings, const std::string& metric, bool maximize,
                         const std::vector<trial>& trials, std::size_t index, std::int64_t step) {
  std::size_t complete = 0;
  std::vector<double> at_step;
  for (const auto& t : trials) {
    if (t.state != trial_state::complete)
      continue;
    ++complete;
    if (auto i = t.intermediate.find(step); i != t.intermediate.end() && !std::isnan(i->second))
      at_step.push_back(i->second);
  }
  if (complete == 0 || complete < settings.n_startup_trials || step < settings.n_warmup_steps
      || (step - settings.n_warmup_steps) % settings.interval_steps != 0 || at_step.empty())
    return "";
  const auto& mine = trials.at(index).intermediate;
  std::optional<double> best;
  for (const auto& [s, v] : mine)
    if (s <= step && !std::isnan(v) && (!best || (maximize ? v > *best : v < *best)))
      best = v;
  auto m = median(at_step);
  if (best && (maximize ? *best >= m : *best <= m))
    return "";
  return "pruned at epoch " + std::to_string(step) + " by the median pruner: its best " + metric + " so far ("
         + (best ? value_text(*best) : std::string{"none"}) + ") is " + (maximize ? "below" : "above")
         + " the median (" + value_text(m) + ") of the " + std::to_string(at_step.size())
         + " complete trials at that epoch";
}

} // namespace cdui::policy
