#include "actors/policy/study_plan.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

#include "actors/policy/asha_pruner.hpp"
#include "actors/policy/median_pruner.hpp"
#include "actors/policy/tpe_sampler.hpp"

namespace cdui::policy {

std::size_t trials_to_start(const study_spec& spec, const std::vector<trial>& trials, bool cancel_asked) {
  if (cancel_asked || trials.size() >= spec.trials)
    return 0;
  auto running = static_cast<std::size_t>(
    std::count_if(trials.begin(), trials.end(), [](const trial& t) { return t.state == trial_state::running; }));
  if (running >= spec.max_parallel)
    return 0;
  return std::min<std::size_t>(spec.max_parallel - running, spec.trials - trials.size());
}

variant_params propose(const study_spec& spec, bool maximize, const std::vector<trial>& trials, std::uint64_t number) {
  if (spec.sampler == sampler_kind::tpe)
    return tpe_params(spec, maximize, trials, number);
  return random_params(spec, number);
}

std::string prune_reason(const study_spec& spec, const sweep_objective& objective, const std::vector<trial>& trials,
                         std::size_t index, std::int64_t step) {
  if (trials.at(index).state != trial_state::running)
    return "";
  switch (spec.pruner) {
    case pruner_kind::median:
      return median_prune(spec.median, objective.metric, objective.maximize, trials, index, step);
    case pruner_kind::asha:
      return asha_prune(spec.asha, objective.metric, objective.maximize, trials, index, step);
    case pruner_kind::none: break;
  }
  return "";
}

std::optional<std::int64_t> pruned_step(const std::string& reason) {
  constexpr std::string_view prefix = "pruned at epoch ";
  if (reason.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  std::int64_t step = 0;
  auto digits = reason.data() + prefix.size();
  auto [end, ec] = std::from_chars(digits, reason.data() + reason.size(), step);
  if (ec != std::errc{} || end == digits || (end != reason.data() + reason.size() && *end != ' '))
    return std::nullopt;
  return step;
}

std::optional<std::size_t> best_trial(const std::vector<trial>& trials, bool maximize) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const auto& t = trials[i];
    if (t.state != trial_state::complete || !t.value)
      continue;
    if (!best || (maximize ? *t.value > *trials[*best].value : *t.value < *trials[*best].value))
      best = i;
  }
  return best;
}

sweep_state study_state(const study_spec& spec, const std::vector<trial>& trials, bool cancel_asked, bool started) {
  bool running = std::any_of(trials.begin(), trials.end(), [](const trial& t) { return t.state == trial_state::running; });
  if (cancel_asked)
    return running ? sweep_state::cancelling : sweep_state::cancelled;
  if (running || trials.size() < spec.trials)
    return started ? sweep_state::running : sweep_state::queued;
  bool complete = std::any_of(trials.begin(), trials.end(), [](const trial& t) { return t.state == trial_state::complete; });
  return complete ? sweep_state::finished : sweep_state::failed;
}

std::optional<std::pair<std::int64_t, double>> objective_point(const nlohmann::json& data, const std::string& metric) {
  if (!data.is_object() || !data.contains("name") || !data["name"].is_string() || !data.contains("value")
      || !data["value"].is_number() || !data.contains("step") || !data["step"].is_number_integer())
    return std::nullopt;
  auto name = data["name"].get<std::string>();
  auto node = data.value("node", std::string{});
  if (metric != name && metric != node + "." + name)
    return std::nullopt;
  auto value = data["value"].get<double>();
  if (!std::isfinite(value))
    return std::nullopt;
  return std::pair{data["step"].get<std::int64_t>(), value};
}

std::optional<double> trial_value(const trial& t, const std::string& final_metrics, const std::string& metric) {
  if (!t.intermediate.empty())
    return t.intermediate.rbegin()->second;
  if (auto v = objective_value(final_metrics, metric))
    return v;
  auto dot = metric.find('.');
  auto prefixed = dot == std::string::npos ? "final_" + metric
                                           : metric.substr(0, dot + 1) + "final_" + metric.substr(dot + 1);
  return objective_value(final_metrics, prefixed);
}

} // namespace cdui::policy
