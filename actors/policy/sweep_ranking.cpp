#include "actors/policy/sweep_ranking.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace cdui::policy {

namespace {

constexpr std::pair<sweep_state, const char*> state_names[] = {
  {sweep_state::queued, "queued"},         {sweep_state::running, "running"},
  {sweep_state::cancelling, "cancelling"}, {sweep_state::finished, "finished"},
  {sweep_state::failed, "failed"},         {sweep_state::cancelled, "cancelled"}};


std::optional<double> number_in(const nlohmann::json& node, const std::string& name) {
  if (!node.is_object())
    return std::nullopt;
  auto i = node.find(name);
  if (i == node.end() || !i->is_number())
    return std::nullopt;
  auto x = i->get<double>();
  return std::isfinite(x) ? std::optional{x} : std::nullopt;
}

} // namespace

const char* to_string(sweep_state s) {
  for (const auto& [state, name] : state_names)
    if (state == s)
      return name;
  return "failed";
}

std::optional<sweep_state> parse_sweep_state(const std::string& text) {
  for (const auto& [state, name] : state_names)
    if (text == name)
      return state;
  return std::nullopt;
}

sweep_state state_of(const std::vector<run_status>& children, bool cancel_asked) {
  bool waiting = false, started = false, succeeded = false;
  for (auto s : children) {
    waiting |= !is_final(s);
    started |= s != run_status::queued;
    succeeded |= s == run_status::succeeded;
  }
  if (waiting)
    return cancel_asked ? sweep_state::cancelling : started ? sweep_state::running : sweep_state::queued;
  if (cancel_asked)
    return sweep_state::cancelled;
  return succeeded ? sweep_state::finished : sweep_state::failed;
}

std::map<std::string, std::size_t> count_by_status(const std::vector<run_status>& children) {
  std::map<std::string, std::size_t> out;
  for (auto s : all_run_statuses)
    out[std::string{to_string(s)}] = 0;
  for (auto s : children)
    ++out[std::string{to_string(s)}];
  return out;
}

std::optional<double> objective_value(const std::string& final_metrics, const std::string& metric) {
  auto metrics = nlohmann::json::parse(final_metrics, nullptr, false);
  if (!metrics.is_object())
    return std::nullopt;
  // A node id may hold dots, a metric name seldom does: the last dot splits them.
  if (auto dot = metric.rfind('.'); dot != std::string::npos) {
    auto node = metrics.find(metric.substr(0, dot));
    if (node != metrics.end())
      if (auto x = number_in(*node, metric.substr(dot + 1)))
        return x;
  }
  for (const auto& [node, values] : metrics.items())
    if (auto x = number_in(values, metric))
      return x;
  return std::nullopt;
}

std::vector<ranked_variant> rank_variants(const std::vector<variant_score>& scores, bool maximize) {
  auto order = scores;
  std::stable_sort(order.begin(), order.end(), [maximize](const variant_score& a, const variant_score& b) {
    if (a.objective.has_value() != b.objective.has_value())
      return a.objective.has_value();
    if (!a.objective || *a.objective == *b.objective)
      return a.index < b.index;
    return maximize ? *a.objective > *b.objective : *a.objective < *b.objective;
  });
  std::vector<ranked_variant> out;
  out.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    std::size_t rank = 0;
    if (order[i].objective)
      rank = i > 0 && order[i - 1].objective == order[i].objective ? out.back().rank : i + 1;
    out.push_back({order[i].index, rank});
  }
  return out;
}

} // namespace cdui::policy
