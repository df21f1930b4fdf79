#include "apps/sweep_json.hpp"

#include <algorithm>
#include <sstream>

#include "actors/policy/sweep_ranking.hpp"
#include "apps/text_table.hpp"
#include "messages/slot_key.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;

struct objective_of_sweep {
  std::string metric;
  bool maximize = false;
};

objective_of_sweep objective(const sweep_record& sweep) {
  auto j = json::parse(sweep.objective, nullptr, false);
  if (!j.is_object())
    return {};
  return {j.value("metric", std::string{}), j.value("direction", std::string{}) == "max"};
}

std::string state(const sweep_record& sweep, const std::vector<sweep_child>& runs) {
  if (sweep.state != sweep_active)
    return sweep.state;
  std::vector<run_status> statuses;
  for (const auto& c : runs)
    statuses.push_back(c.run.status);
  return policy::to_string(policy::state_of(statuses, sweep.cancel_asked));
}

json counts(const std::vector<sweep_child>& runs) {
  std::vector<run_status> statuses;
  for (const auto& c : runs)
    statuses.push_back(c.run.status);
  return policy::count_by_status(statuses);
}

/// Where a run is: its worker (null for this server or while not placed) and devices.
json placement(const run_info& r) {
  auto key = slot_key::parse(r.queue_key);
  bool placed = !(key.local() && (key.device == "any" || key.device == "one-shot"));
  json devices = json::array();
  auto options = json::parse(r.options, nullptr, false);
  if (options.is_object() && options.contains("target") && options["target"].is_object()
      && options["target"].contains("devices"))
    devices = options["target"]["devices"];
  else if (placed && !r.queue_key.empty())
    devices.push_back(key.device);
  return {{"worker_id", placed && !key.local() ? json(key.offerer) : json(nullptr)}, {"devices", devices}};
}

/// The variants in rank order, each as GET shows it.
json ranked(const sweep_record& sweep, const std::vector<sweep_child>& runs) {
  auto goal = objective(sweep);
  std::vector<policy::variant_score> scores;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::optional<double> value;
    if (runs[i].run.status == run_status::succeeded)
      value = policy::objective_value(runs[i].run.final_metrics, goal.metric);
    scores.push_back({i, value});
  }
  json out = json::array();
  for (const auto& r : policy::rank_variants(scores, goal.maximize)) {
    const auto& c = runs[r.index];
    auto where = placement(c.run);
    out.push_back({{"index", c.index},
                   {"rank", r.rank > 0 ? json(r.rank) : json(nullptr)},
                   {"run_id", c.run.id},
                   {"status", to_string(c.run.status)},
                   {"params", json::parse(c.params, nullptr, false)},
                   {"objective", scores[r.index].objective ? json(*scores[r.index].objective) : json(nullptr)},
                   {"worker_id", where["worker_id"]},
                   {"devices", where["devices"]},
                   {"queue_key", c.run.queue_key},
                   {"error", c.run.error.empty() ? json(nullptr) : json(c.run.error)}});
  }
  return out;
}

std::string cell(const json& v) {
  if (v.is_null())
    return "-";
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_number_float()) {
    std::ostringstream out;
    out << v.get<double>();
    return out.str();
  }
  return v.dump();
}

/// The swept params' names, in the spec's order.
std::vector<std::string> param_names(const json& variants) {
  std::vector<std::string> out;
  for (const auto& v : variants)
    if (v["params"].is_object())
      for (const auto& [name, unused] : v["params"].items())
        if (std::find(out.begin(), out.end(), name) == out.end())
          out.push_back(name);
  return out;
}

} // namespace

json sweep_summary_json(const sweep_record& sweep, const std::vector<sweep_child>& runs) {
  return {{"sweep_id", sweep.id},
          {"name", sweep.name},
          {"state", state(sweep, runs)},
          {"runs", runs.size()},
          {"counts", counts(runs)},
          {"objective", json::parse(sweep.objective, nullptr, false)},
          {"created_ms", sweep.created_ms},
          {"finished_ms", sweep.finished_ms ? json(sweep.finished_ms) : json(nullptr)}};
}

json sweep_json(const sweep_record& sweep, const std::vector<sweep_child>& runs) {
  auto j = sweep_summary_json(sweep, runs);
  j["spec"] = json::parse(sweep.spec, nullptr, false);
  j["options"] = json::parse(sweep.options, nullptr, false);
  j["cancel_asked"] = sweep.cancel_asked;
  j["variants"] = ranked(sweep, runs);
  j["best"] = !j["variants"].empty() && !j["variants"][0]["rank"].is_null() ? j["variants"][0] : json(nullptr);
  return j;
}

std::string sweep_csv(const sweep_record& sweep, const std::vector<sweep_child>& runs) {
  auto variants = ranked(sweep, runs);
  auto names = param_names(variants);
  std::string out = "rank,index,run_id,status";
  for (const auto& n : names)
    out += "," + csv_field(n);
  out += "," + csv_field(objective(sweep).metric) + ",worker_id,queue_key\n";
  for (const auto& v : variants) {
    out += (v["rank"].is_null() ? "" : cell(v["rank"])) + "," + cell(v["index"]) + "," + cell(v["run_id"])
           + "," + cell(v["status"]);
    for (const auto& n : names)
      out += "," + csv_field(v["params"].contains(n) ? cell(v["params"][n]) : "");
    out += "," + (v["objective"].is_null() ? "" : cell(v["objective"])) + ","
           + csv_field(v["worker_id"].is_null() ? "" : cell(v["worker_id"])) + "," + csv_field(cell(v["queue_key"]))
           + "\n";
  }
  return out;
}

std::string sweep_table(const json& sweep) {
  const auto& variants = sweep["variants"];
  auto names = param_names(variants);
  std::vector<std::string> header{"RANK", "RUN", "STATUS"};
  for (const auto& n : names)
    header.push_back(n);
  header.push_back(sweep["objective"].value("metric", std::string{"OBJECTIVE"}));
  header.push_back("WORKER");
  header.push_back("QUEUE");
  std::vector<std::vector<std::string>> rows{header};
  for (const auto& v : variants) {
    std::vector<std::string> row{cell(v["rank"]), cell(v["run_id"]), cell(v["status"])};
    for (const auto& n : names)
      row.push_back(v["params"].contains(n) ? cell(v["params"][n]) : "-");
    row.push_back(cell(v["objective"]));
    row.push_back(v["worker_id"].is_null() ? "-" : cell(v["worker_id"]));
    row.push_back(cell(v["queue_key"]));
    rows.push_back(std::move(row));
  }
  return format_table(rows);
}

} // namespace cdui::apps
