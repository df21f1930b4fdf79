// The HTTP API's sweeps and studies (docs/http-api.md#sweeps, #studies): submit, list, read,
// cancel, and a sweep's results as CSV.
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "actors/policy/study_plan.hpp"
#include "actors/server/server.hpp"
#include "apps/http_resources.hpp"
#include "apps/study_json.hpp"
#include "apps/sweep_json.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;

/// A sweep's or a study's body, read by `parse`; nullopt once the refusal is answered.
template <class Request, class Parse>
std::optional<Request> read_search_body(const httplib::Request& req, httplib::Response& res, Parse parse) {
  auto body = json_body(req, res);
  if (!body)
    return std::nullopt;
  auto parsed = parse(*body);
  if (auto* err = std::get_if<policy::submission_error>(&parsed)) {
    refuse(res, err->unprocessable ? 422 : 400, err->message);
    return std::nullopt;
  }
  return std::get<Request>(std::move(parsed));
}

/// POST /api/sweeps {graph, name?, spec, objective, options?}: every variant queued, or none.
void post_sweep(cdui::server& runtime, const httplib::Request& req, httplib::Response& res) {
  auto request = read_search_body<policy::sweep_request>(req, res, policy::parse_sweep_body);
  if (!request)
    return;
  auto result = runtime.submit_sweep(std::move(*request));
  if (!result.ok()) {
    refuse(res, result.unavailable ? 503 : 400, result.error);
    return;
  }
  auto sweep = runtime.sweep(result.sweep_id);
  reply(res, 200, {{"sweep_id", result.sweep_id},
                   {"name", sweep ? sweep->name : ""},
                   {"runs", result.run_ids.size()},
                   {"run_ids", result.run_ids},
                   {"spec", sweep ? json::parse(sweep->spec, nullptr, false) : json(nullptr)}});
}

/// POST /api/studies {graph, name?, space, objective, budget, sampler?, pruner?, seed?, options?}:
/// the study and its first trial queued, or nothing.
void post_study(cdui::server& runtime, const httplib::Request& req, httplib::Response& res) {
  auto request = read_search_body<policy::study_request>(req, res, policy::parse_study_body);
  if (!request)
    return;
  auto result = runtime.submit_study(std::move(*request));
  if (!result.ok()) {
    refuse(res, result.unavailable ? 503 : 400, result.error);
    return;
  }
  auto study = runtime.study(result.run_id);
  reply(res, 200, {{"study_id", result.run_id},
                   {"name", study ? study->name : ""},
                   {"spec", study ? json::parse(study->spec, nullptr, false) : json(nullptr)}});
}

/// A study's trials with their objective's values per epoch, from their runs' metric points.
std::vector<apps::trial_view> study_trials(cdui::server& runtime, const study_record& study) {
  auto objective = json::parse(study.objective, nullptr, false);
  auto metric = objective.is_object() ? objective.value("metric", std::string{}) : std::string{};
  auto dot = metric.find('.');
  auto name = dot == std::string::npos ? metric : metric.substr(dot + 1);
  std::vector<apps::trial_view> out;
  for (auto& t : runtime.study_trials(study.id)) {
    apps::trial_view v{std::move(t), {}};
    for (const auto& p : runtime.metrics(v.trial.run.id, name).value_or(std::vector<storage::metric_point>{}))
      if (auto point = policy::objective_point(json{{"node", p.node}, {"name", p.name}, {"step", p.step},
                                                    {"value", p.value}},
                                               metric))
        v.intermediate[point->first] = point->second;
    out.push_back(std::move(v));
  }
  return out;
}

/// GET /api/sweeps/{id} and its results.csv; 404 for an unknown id.
void get_sweep(cdui::server& runtime, const std::string& id, bool csv, httplib::Response& res) {
  auto sweep = runtime.sweep(id);
  if (!sweep) {
    refuse(res, sweep.error());
    return;
  }
  auto runs = runtime.sweep_runs(id);
  if (csv) {
    res.status = 200;
    res.set_content(sweep_csv(*sweep, runs), "text/csv");
  } else {
    reply(res, 200, sweep_json(*sweep, runs));
  }
}

/// The answer to POST /api/sweeps/{id}/cancel and /api/studies/{id}/cancel: the error when the
/// cancel could not be asked (404 for no such `kind`), else whether it was taken and the state it
/// left.
void reply_cancel(httplib::Response& res, const std::string& kind, const std::string& id,
                  const answer<bool>& cancelled, const std::function<json()>& search_json) {
  if (!cancelled) {
    refuse(res, cancelled.error());
    return;
  }
  reply(res, 200, {{kind + "_id", id}, {"cancelled", *cancelled}, {"state", search_json()["state"]}});
}

} // namespace

void add_search_routes(route_table& routes, cdui::server& runtime) {
  auto& rt = runtime;
  routes.post("/api/sweeps", [&rt](const httplib::Request& req, httplib::Response& res) {
    post_sweep(rt, req, res);
  });
  routes.get("/api/sweeps", route_access::read, [&rt](const httplib::Request& req, httplib::Response& res) {
    reply_list(req, res, "sweeps", rt.sweeps(),
               [&](const sweep_record& sweep) { return sweep_summary_json(sweep, rt.sweep_runs(sweep.id)); });
  });
  routes.get(R"(/api/sweeps/([^/]+))", route_access::read,
             [&rt](const httplib::Request& req, httplib::Response& res) { get_sweep(rt, req.matches[1], false, res); });
  routes.get(R"(/api/sweeps/([^/]+)/results\.csv)", route_access::read,
             [&rt](const httplib::Request& req, httplib::Response& res) { get_sweep(rt, req.matches[1], true, res); });
  routes.post(R"(/api/sweeps/([^/]+)/cancel)", [&rt](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    reply_cancel(res, "sweep", id, rt.cancel_sweep(id), [&] { return sweep_json(rt.sweep(id).value(), rt.sweep_runs(id)); });
  });
  routes.post("/api/studies", [&rt](const httplib::Request& req, httplib::Response& res) {
    post_study(rt, req, res);
  });
  routes.get("/api/studies", route_access::read, [&rt](const httplib::Request& req, httplib::Response& res) {
    reply_list(req, res, "studies", rt.studies(),
               [&](const study_record& study) { return study_summary_json(study, study_trials(rt, study)); });
  });
  routes.get(R"(/api/studies/([^/]+))", route_access::read, [&rt](const httplib::Request& req, httplib::Response& res) {
    auto study = rt.study(req.matches[1]);
    if (!study) {
      refuse(res, study.error());
      return;
    }
    reply(res, 200, study_json(*study, study_trials(rt, *study)));
  });
  routes.post(R"(/api/studies/([^/]+)/cancel)", [&rt](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    reply_cancel(res, "study", id, rt.cancel_study(id), [&] {
      auto study = rt.study(id).value();
      return study_json(study, study_trials(rt, study));
    });
  });
}

} // namespace cdui::apps
