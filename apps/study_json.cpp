#include "apps/study_json.hpp"

#include "actors/policy/study_plan.hpp"
#include "apps/text_table.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;

struct study_view {
  policy::study_spec spec;
  policy::sweep_objective objective;
  std::vector<policy::trial> trials;
};

study_view view(const study_record& study, const std::vector<trial_view>& trials) {
  study_view v;
  auto spec = policy::parse_study_spec(json::parse(study.spec, nullptr, false));
  if (auto* s = std::get_if<policy::study_spec>(&spec))
    v.spec = *s;
  auto objective = policy::parse_objective(json::parse(study.objective, nullptr, false));
  if (auto* o = std::get_if<policy::sweep_objective>(&objective))
    v.objective = *o;
  for (const auto& t : trials) {
    policy::trial p;
    p.number = t.trial.index;
    p.state = policy::trial_state_of(t.trial.run.status);
    p.intermediate = t.intermediate;
    if (p.state == policy::trial_state::complete)
      p.value = policy::trial_value(p, t.trial.run.final_metrics, v.objective.metric);
    v.trials.push_back(std::move(p));
  }
  return v;
}

std::string state(const study_record& study, const study_view& v) {
  if (study.state != sweep_active)
    return study.state;
  bool started = false;
  for (const auto& t : v.trials)
    started |= t.state != policy::trial_state::running || !t.intermediate.empty();
  return policy::to_string(policy::study_state(v.spec, v.trials, study.cancel_asked, started));
}

json counts(const std::vector<trial_view>& trials) {
  std::vector<run_status> statuses;
  for (const auto& t : trials)
    statuses.push_back(t.trial.run.status);
  return policy::count_by_status(statuses);
}

std::int64_t epochs_of(const trial_view& t) {
  return t.intermediate.empty() ? 0 : t.intermediate.rbegin()->first;
}

json summary(const study_record& study, const study_view& v, const std::vector<trial_view>& trials) {
  auto j = json::parse(study.spec, nullptr, false);
  std::int64_t epochs = 0;
  for (const auto& t : trials)
    epochs += epochs_of(t);
  json best = nullptr;
  if (auto b = policy::best_trial(v.trials, v.objective.maximize))
    best = {{"number", trials[*b].trial.index},
            {"run_id", trials[*b].trial.run.id},
            {"value", *v.trials[*b].value},
            {"params", json::parse(trials[*b].trial.params, nullptr, false)}};
  return {{"study_id", study.id},
          {"name", study.name},
          {"state", state(study, v)},
          {"objective", json::parse(study.objective, nullptr, false)},
          {"space", j.value("space", json::array())},
          {"budget", j.value("budget", json::object())},
          {"sampler", j.value("sampler", json::object())},
          {"pruner", j.value("pruner", json::object())},
          {"seed", j.value("seed", json(nullptr))},
          {"trials_started", trials.size()},
          {"counts", counts(trials)},
          {"epochs", epochs},
          {"best", best},
          {"created_ms", study.created_ms},
          {"finished_ms", study.finished_ms > 0 ? json(study.finished_ms) : json(nullptr)}};
}

} // namespace

json study_json(const study_record& study, const std::vector<trial_view>& trials) {
  auto v = view(study, trials);
  auto out = summary(study, v, trials);
  json list = json::array();
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const auto& t = trials[i];
    json intermediate = json::object();
    for (const auto& [step, value] : t.intermediate)
      intermediate[std::to_string(step)] = value;
    list.push_back({{"number", t.trial.index},
                    {"run_id", t.trial.run.id},
                    {"status", to_string(t.trial.run.status)},
                    {"params", json::parse(t.trial.params, nullptr, false)},
                    {"intermediate_values", intermediate},
                    {"value", v.trials[i].value ? json(*v.trials[i].value) : json(nullptr)},
                    {"epochs", epochs_of(t)},
                    {"error", t.trial.run.error},
                    {"queue_key", t.trial.run.queue_key}});
  }
  out["trials"] = list;
  return out;
}

json study_summary_json(const study_record& study, const std::vector<trial_view>& trials) {
  return summary(study, view(study, trials), trials);
}

std::string study_table(const json& study) {
  std::vector<std::string> header{"TRIAL", "RUN", "STATUS"};
  std::vector<std::string> labels;
  for (const auto& p : study.value("space", json::array()))
    labels.push_back(p.value("node", "") + "." + p.value("param", ""));
  header.insert(header.end(), labels.begin(), labels.end());
  header.push_back(study.value("objective", json::object()).value("metric", std::string{"objective"}));
  header.push_back("EPOCHS");
  std::vector<std::vector<std::string>> rows{header};
  for (const auto& t : study.value("trials", json::array())) {
    std::vector<std::string> row{std::to_string(t.value("number", 0)), t.value("run_id", ""), t.value("status", "")};
    for (const auto& l : labels) {
      auto v = t["params"].value(l, json(nullptr));
      row.push_back(v.is_string() ? v.get<std::string>() : v.is_number_float() ? policy::value_text(v.get<double>()) : v.dump());
    }
    // The last epoch's value (the keys are epochs as text, so compare them as numbers).
    std::int64_t last = -1;
    std::string value = "-";
    for (const auto& [k, val] : t["intermediate_values"].items())
      if (std::stoll(k) > last) {
        last = std::stoll(k);
        value = policy::value_text(val.get<double>());
      }
    row.push_back(value);
    row.push_back(std::to_string(t.value("epochs", 0)));
    rows.push_back(std::move(row));
  }
  return format_table(rows);
}

} // namespace cdui::apps
