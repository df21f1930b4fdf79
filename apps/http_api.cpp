#include "apps/http_api.hpp"

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/policy/run_options.hpp"
#include "actors/policy/study_plan.hpp"
#include "actors/policy/worker_table.hpp"
#include "actors/server/server.hpp"
#include "apps/dashboard.hpp"
#include "apps/http_access.hpp"
#include "apps/http_edge.hpp"
#include "apps/list_page.hpp"
#include "apps/run_json.hpp"
#include "apps/status_json.hpp"
#include "apps/study_json.hpp"
#include "apps/sweep_json.hpp"
#include "devices/device.hpp"
#include "messages/clock.hpp"
#include "messages/json_text.hpp"
#include "messages/slot_key.hpp"
#include "messages/text.hpp"
#include "messages/version.hpp"
#include "messages/wire.hpp"
#include "runtime/estimate.hpp"
#include "runtime/parameter_estimate.hpp"
#include "runtime/validate.hpp"
#include "storage/lru_store.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;

/// The longest a long-poll waits, whatever `wait` asks for.
constexpr double max_wait_seconds = 60.0;
/// The page size of GET /api/runs when `limit` is not given, and the largest page of any list.
constexpr std::size_t default_page = 50;
constexpr std::size_t max_page = 1000;

/// Who may do what (apps/http_access.hpp), shared by every route: the rules, and the browser
/// sessions they point to, kept alive with them.
struct access_gate {
  access_rules rules;
  std::shared_ptr<browser_sessions> sessions;
};

/// Whether `req` may read or change something; false with the 403 sent when it may not.
bool authorized(const httplib::Request& req, httplib::Response& res, const access_gate& g,
                request_kind kind = request_kind::change) {
  auto decision = check_access(credentials_of(req), kind, g.rules, browser_sessions::clock::now());
  if (decision.allowed)
    return true;
  refuse(res, 403, decision.refusal);
  return false;
}

/// The 400 for the first string of the request a route would read that is not UTF-8 ("path
/// segment 'run id' is not valid UTF-8: ..."); empty when every one is. Checked here, at the edge,
/// so that no handler carries such bytes into a message, a log or the store.
std::string non_utf8_refusal(const httplib::Request& req) {
  static const std::map<std::string_view, const char*> segment_names{
    {"runs", "run id"}, {"workers", "worker name"}, {"sessions", "session id"}, {"sweeps", "sweep id"},
    {"studies", "study id"}};
  if (!text::is_utf8(req.path)) {
    // /api/<collection>/<name>/...: a bad <name> is named, anything else is "the path".
    std::vector<std::string_view> segments;
    for (std::string_view rest = req.path; !rest.empty();) {
      auto slash = rest.find('/');
      segments.push_back(rest.substr(0, slash));
      rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    }
    auto name = segments.size() > 3 && segments[1] == "api" ? segment_names.find(segments[2])
                                                            : segment_names.end();
    if (name != segment_names.end() && !text::is_utf8(segments[3]))
      return std::string{"path segment '"} + name->second + "' is not valid UTF-8: "
             + text::quoted(segments[3]);
    return "the path is not valid UTF-8: " + text::quoted(req.path);
  }
  for (const auto& [key, value] : req.params) {
    if (!text::is_utf8(key))
      return "a query parameter's name is not valid UTF-8: " + text::quoted(key);
    if (!text::is_utf8(value))
      return "query parameter '" + key + "' is not valid UTF-8: " + text::quoted(value);
  }
  return {};
}

json parse_or_null(const std::string& text) {
  return json::parse(text, nullptr, false);
}

/// The run object (run_json), with a running run's latest `progress` event: where it is now, which
/// a page of runs shows without reading every run's events.
json run_object(cdui::server& runtime, const run_info& run) {
  auto j = run_json(run);
  auto progress = run.status == run_status::running ? runtime.last_event(run.id, "progress")
                                                    : std::nullopt;
  j["progress"] = progress ? parse_or_null(progress->data) : json(nullptr);
  return j;
}

/// PUT .../sharing {"mode": "shared" | "exclusive"}: this server's device (`worker` empty) or a
/// worker's. 404 for a device or worker it does not know, 409 for a card that cannot be shared.
void put_sharing(cdui::server& rt, const std::string& worker, const std::string& device,
                 const httplib::Request& req, httplib::Response& res) {
  auto body = parse_json_text(req.body).value;
  auto mode = body.is_object() ? body.value("mode", json()) : json();
  if (mode != "shared" && mode != "exclusive") {
    refuse(res, 400, "field 'mode': must be \"shared\" (runs declare a memory budget and share the "
                     "card) or \"exclusive\" (one run at a time by count)");
    return;
  }
  auto why = worker.empty() ? rt.share_device(device, mode == "shared")
                            : rt.share_worker_device(worker, device, mode == "shared");
  if (!why.empty()) {
    bool unknown = why.rfind("this server has no device", 0) == 0 || why.rfind("no worker named", 0) == 0
                   || why.rfind("no device", 0) == 0;
    refuse(res, unknown ? 404 : 409, why);
    return;
  }
  json answer{{"device", device}, {"mode", mode}};
  if (!worker.empty())
    answer["worker"] = worker;
  reply(res, 200, answer);
}

/// Reads an integer query parameter of at least `min`; false (with a 400 sent) when it is not one.
bool query_number(const httplib::Request& req, httplib::Response& res, const char* name,
                  std::uint64_t& out, std::uint64_t min = 0) {
  if (!req.has_param(name))
    return true;
  auto text = req.get_param_value(name);
  try {
    std::size_t used = 0;
    if (!text.empty() && text[0] != '-') {
      auto value = std::stoull(text, &used);
      if (used == text.size() && value >= min) {
        out = value;
        return true;
      }
    }
  } catch (const std::exception&) {
  }
  refuse(res, 400, std::string{"query parameter '"} + name + "' must be an integer of at least "
                     + std::to_string(min) + ", not " + text::quoted(text));
  return false;
}

/// The page `req` asks of a list with `<prefix>limit` (at most max_page) and `<prefix>offset`;
/// `page` is empty when it names neither and there is no `default_limit` (the lists that answered
/// whole before they were paged still do), `refused` true with the 400 sent for a bad value.
struct page_request {
  bool refused = false;
  std::optional<list_page> page;
};

page_request page_asked(const httplib::Request& req, httplib::Response& res, const std::string& prefix = "",
                        std::uint64_t default_limit = 0) {
  auto limit_name = prefix + "limit";
  auto offset_name = prefix + "offset";
  list_page page{default_limit > 0 ? default_limit : max_page, 0};
  if (!query_number(req, res, limit_name.c_str(), page.limit, 1)
      || !query_number(req, res, offset_name.c_str(), page.offset))
    return {true, std::nullopt};
  if (default_limit == 0 && !req.has_param(limit_name) && !req.has_param(offset_name))
    return {};
  page.limit = std::min<std::uint64_t>(page.limit, max_page);
  return {false, page};
}

/// GET of a list that answers whole unless the request names `limit` or `offset`: `key` holds
/// `to_json` of each item of the page, and a page's answer says its total, limit and offset.
template <class T, class ToJson>
void reply_list(const httplib::Request& req, httplib::Response& res, const char* key, const std::vector<T>& all,
                ToJson to_json) {
  auto asked = page_asked(req, res);
  if (asked.refused)
    return;
  json items = json::array();
  for (const auto& item : asked.page ? asked.page->of(all) : all)
    items.push_back(to_json(item));
  json answer{{key, items}};
  if (asked.page)
    answer.update(page_fields(*asked.page, all.size()));
  reply(res, 200, answer);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos)
    return s;
  std::string out = "\"";
  for (char c : s)
    out += c == '"' ? std::string{"\"\""} : std::string(1, c);
  return out + "\"";
}

void post_run(cdui::server& runtime, const httplib::Request& req, httplib::Response& res) {
  auto body = json_body(req, res);
  if (!body)
    return;
  auto parsed = policy::parse_submission(*body);
  if (auto* err = std::get_if<policy::submission_error>(&parsed)) {
    refuse(res, err->unprocessable ? 422 : 400, err->message);
    return;
  }
  auto result = runtime.submit(std::get<run_request>(std::move(parsed)));
  if (!result.ok()) {
    refuse(res, result.unavailable ? 503 : 400, result.error);
    return;
  }
  auto info = runtime.info(result.run_id);
  json warnings = json::array();
  for (const auto& w : result.warnings)
    warnings.push_back({{"kind", w.kind}, {"message", w.message}});
  reply(res, 200,
        {{"run_id", result.run_id},
         {"status", info ? to_string(info->status) : "queued"},
         {"queue_key", info ? info->queue_key : ""},
         {"queue_position", info ? info->queue_position : 0},
         {"device_requested", device_requested(info ? parse_or_null(info->options) : json(nullptr))},
         {"warnings", warnings}});
}

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
    refuse(res, 404, "no sweep has the id '" + id + "'");
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

/// The answer to POST /api/sweeps/{id}/cancel and /api/studies/{id}/cancel: 404 when there is no
/// such `kind` (cancelled is nullopt), else whether the cancel was taken and the state it left.
void reply_cancel(httplib::Response& res, const std::string& kind, const std::string& id,
                  std::optional<bool> cancelled, const std::function<json()>& search_json) {
  if (!cancelled) {
    refuse(res, 404, "no " + kind + " has the id '" + id + "'");
    return;
  }
  reply(res, 200, {{kind + "_id", id}, {"cancelled", *cancelled}, {"state", search_json()["state"]}});
}

/// POST /api/estimate {"parameters": N, ...}: the weights, gradients and optimizer state of a model
/// known by its parameter count (docs/training-memory.md, "From a parameter count").
void post_parameter_estimate(const json& body, httplib::Response& res) {
  for (const auto& [field, unused] : body.items())
    if (field != "parameters" && field != "precision" && field != "optimizer" && field != "trainable"
        && field != "state_precision") {
      refuse(res, 400, "field '" + field + "' is not known with parameters (known: parameters, "
                       "precision, optimizer, trainable, state_precision)");
      return;
    }
  auto read = runtime::read_parameter_request(body);
  if (auto* bad = std::get_if<runtime::request_error>(&read)) {
    refuse(res, 400, "field '" + bad->field + "' " + bad->message);
    return;
  }
  reply(res, 200, runtime::to_json(runtime::estimate_from_parameters(
                    std::get<runtime::parameter_request>(read))));
}

/// POST /api/estimate: the static memory estimate of a graph's training run, or of a parameter
/// count. Computed here from the layer shapes (microseconds, no tensor); never applied to a run: a
/// client that wants it as a budget sends it with memory_source "estimate".
void post_estimate(const httplib::Request& req, httplib::Response& res) {
  auto parsed = json_body(req, res);
  if (!parsed)
    return;
  auto& body = *parsed;
  if (body.is_object() && body.contains("parameters") && !body.contains("graph")) {
    post_parameter_estimate(body, res);
    return;
  }
  if (!body.is_object() || !body.contains("graph") || !body["graph"].is_object()) {
    refuse(res, 422, "the body must be a JSON object {\"graph\": {...}}, optionally with "
                     "\"device\" and \"cards\", or {\"parameters\": N}, optionally with "
                     "\"precision\", \"optimizer\", \"trainable\" and \"state_precision\"");
    return;
  }
  if (body.contains("parameters")) {
    refuse(res, 400, "give graph or parameters, not both: they are two different estimates");
    return;
  }
  for (const auto& [field, unused] : body.items())
    if (field != "graph" && field != "device" && field != "cards") {
      refuse(res, 400, "field '" + field + "' is not known (known: graph, device, cards)");
      return;
    }
  runtime::estimate_options options;
  if (body.contains("device")) {
    if (!body["device"].is_string()) {
      refuse(res, 400, "field 'device' must be a string such as \"cuda:0\"");
      return;
    }
    options.device = body["device"].get<std::string>();
    auto parsed = devices::parse_device(options.device);
    if (auto* bad = std::get_if<devices::device_parse_error>(&parsed)) {
      refuse(res, 400, "field 'device': " + bad->message);
      return;
    }
  }
  if (body.contains("cards")) {
    const auto& cards = body["cards"];
    if (!cards.is_number_integer() || cards.get<std::int64_t>() < 1 || cards.get<std::int64_t>() > 1024) {
      refuse(res, 400, "field 'cards' must be an integer from 1 to 1024");
      return;
    }
    options.cards = cards.get<std::int64_t>();
  }
  auto checked = runtime::validate_graph(body["graph"]);
  if (const auto* errors = std::get_if<std::vector<runtime::graph_error>>(&checked)) {
    json listed = json::array();
    for (const auto& e : *errors)
      listed.push_back({{"node", e.node}, {"field", e.field}, {"message", e.message}});
    reply(res, 400, {{"detail", runtime::to_string(*errors)}, {"errors", listed}});
    return;
  }
  reply(res, 200, runtime::to_json(runtime::estimate_memory(std::get<runtime::validated_graph>(checked),
                                                            options)));
}

/// Whether `host` can go into a shell command as it is: a name or an address, nothing a shell
/// would read (a Host header is whatever the client sent).
/// IPv4 addresses and host names only: the agents' endpoint takes no IPv6.
bool plain_host(const std::string& host) {
  return !host.empty() && host.size() <= 253 && host[0] != '-'
         && host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")
              == std::string::npos;
}

/// What a new credential comes with: the exact command that starts the worker on the other
/// machine. The host in it is `server_host` when the body gives one, else the host the request
/// was addressed to, else the host the agents' endpoint is bound to.
json credential_json(cdui::server& runtime, const enrollment& e, const httplib::Request& req,
                     const json& body) {
  auto endpoint = runtime.zmq_endpoint();  // tcp://HOST:PORT
  auto colon = endpoint.rfind(':');
  auto bound_host = endpoint.substr(6, colon - 6);
  auto port = endpoint.substr(colon + 1);
  std::string host;
  if (body.is_object() && body.contains("server_host"))
    host = body["server_host"].get<std::string>();  // checked by the caller
  else if (auto h = req.get_header_value("Host"); !h.empty())
    host = h.substr(0, h.find(':'));
  if (!plain_host(host) || host == "0.0.0.0")
    host = bound_host;
  if (host == "0.0.0.0")  // listening everywhere, reached by no usable name: this machine's
    if (auto name = devices::host_name(); plain_host(name))
      host = name;
  auto server = "tcp://" + host + ":" + port;
  auto key = runtime.zmq_public_key();
  auto file = e.name + ".credential";
  auto command = "umask 077 && printf '%s\\n' '" + e.credential + "' > " + file
                 + " && cdui agent start --name " + e.name + " --server " + server
                 + " --credential " + file + (key.empty() ? "" : " --server-key '" + key + "'");
  json j{{"name", e.name},
         {"credential", e.credential},
         {"credential_file", file},
         {"server", server},
         {"server_public_key", key.empty() ? json(nullptr) : json(key)},
         {"command", command},
         {"warning", nullptr}};
  if (bound_host.rfind("127.", 0) == 0)
    j["warning"] = "this server takes agents on " + endpoint + " only, which no other machine can "
                   "reach; restart it with `cdui start --host ADDRESS` (the wire is then encrypted) "
                   "or reach it through an SSH tunnel";
  return j;
}

/// Answers an enroll, rekey or remove that the registry refused; false when it was done.
bool refused_enrollment(httplib::Response& res, const enrollment& e) {
  if (e.error.empty())
    return false;
  refuse(res, e.refusal == "conflict" ? 409 : e.refusal == "unknown" ? 404 : 400, e.error);
  return true;
}

/// The body of an enroll (`name` required) or a rekey (no `name`): a JSON object with at most
/// `server_host` besides. Empty for a rekey is an empty object. nullopt (400 sent) when it is bad.
std::optional<json> enrollment_body(const httplib::Request& req, httplib::Response& res,
                                    bool needs_name) {
  auto body = req.body.empty() && !needs_name ? json::object() : parse_json_text(req.body).value;
  if (!body.is_object()) {
    refuse(res, 400, needs_name ? "the body must be a JSON object {\"name\": \"...\"}"
                                : "the body must be empty or a JSON object {\"server_host\": \"...\"}");
    return std::nullopt;
  }
  if (needs_name && (!body.contains("name") || !body["name"].is_string())) {
    refuse(res, 400, "field 'name': the worker's name is required, as a string");
    return std::nullopt;
  }
  for (const auto& [key, value] : body.items())
    if ((key != "name" || !needs_name) && key != "server_host") {
      refuse(res, 400, "field '" + key + "' is not known (known: "
                         + (needs_name ? "name, server_host" : "server_host") + ")");
      return std::nullopt;
    }
  if (body.contains("server_host")
      && (!body["server_host"].is_string() || !plain_host(body["server_host"].get<std::string>()))) {
    refuse(res, 400, "field 'server_host': a host name or an IPv4 address the other machine reaches "
                     "this server by (letters, digits, '.', '-')");
    return std::nullopt;
  }
  return body;
}

void post_enroll(cdui::server& runtime, const httplib::Request& req, httplib::Response& res) {
  auto body = enrollment_body(req, res, true);
  if (!body)
    return;
  auto e = runtime.enroll_worker((*body)["name"].get<std::string>());
  if (!refused_enrollment(res, e))
    reply(res, 200, credential_json(runtime, e, req, *body));
}

/// GET /api/runs' `worker` and `device` filters: a worker's name or `local`; a device as its
/// offerer names it (`sim:0`), which never holds a '/' (slot_key). False after a 400.
bool runs_filter(const httplib::Request& req, httplib::Response& res, std::string& worker,
                 std::string& device) {
  worker = req.get_param_value("worker");
  device = req.get_param_value("device");
  if (req.has_param("worker") && worker != "local" && !policy::is_valid_worker_name(worker)) {
    refuse(res, 400, "query parameter 'worker' must be local (this server) or a worker's name ("
                       + std::string{policy::worker_name_rule} + "), not " + text::quoted(worker));
    return false;
  }
  bool device_ok = !device.empty() && device.size() <= 64
                   && std::all_of(device.begin(), device.end(), [](unsigned char c) {
                        return std::isalnum(c) || c == ':' || c == '.' || c == '_' || c == '-';
                      });
  if (req.has_param("device") && !device_ok) {
    refuse(res, 400, "query parameter 'device' must be a device as its machine names it (cpu, sim:0, "
                     "cuda:1), not " + text::quoted(device));
    return false;
  }
  return true;
}

void get_runs(cdui::server& runtime, const httplib::Request& req, httplib::Response& res) {
  auto asked = page_asked(req, res, "", default_page);
  std::string worker;
  std::string device;
  if (asked.refused || !runs_filter(req, res, worker, device))
    return;
  try {
    auto page = runtime.runs(req.get_param_value("status"), worker, device, asked.page->limit, asked.page->offset);
    json runs = json::array();
    for (const auto& r : page.runs)
      runs.push_back(run_object(runtime, r));
    json answer{{"runs", runs}};
    answer.update(page_fields(*asked.page, page.total));
    reply(res, 200, answer);
  } catch (const std::invalid_argument& e) {
    refuse(res, 400, std::string{"query parameter 'status': "} + e.what());
  }
}

/// GET /api/workers: every worker and enrollment, or a page of each (`limit` and `offset` page the
/// workers, `enrolled_limit` and `enrolled_offset` the enrollments, each in name order).
void get_workers(cdui::server& runtime, const httplib::Request& req, httplib::Response& res) {
  auto workers_page = page_asked(req, res);
  if (workers_page.refused)
    return;
  auto enrolled_page = page_asked(req, res, "enrolled_");
  if (enrolled_page.refused)
    return;
  auto w = runtime.workers();
  json extra = json::object();
  if (workers_page.page) {
    extra.update(page_fields(*workers_page.page, w.workers.size()));
    w.workers = workers_page.page->of(w.workers);
  }
  if (enrolled_page.page) {
    extra.update(page_fields(*enrolled_page.page, w.enrolled.size(), "enrolled_"));
    w.enrolled = enrolled_page.page->of(w.enrolled);
  }
  auto answer = workers_json(w, runtime.queue(false), runtime.memory());
  answer.update(extra);
  reply(res, 200, answer);
}

/// Long-polls waiting now, at most `max`: one beyond them answers at once, so that waiting polls
/// never hold every HTTP thread and ordinary requests always find one.
class poll_slots {
public:
  explicit poll_slots(std::size_t max) : max_(max) {}

  /// A waiting poll's slot for as long as it lives; false when every slot was taken.
  class slot {
  public:
    explicit slot(poll_slots& slots) : slots_(slots), taken_(++slots.waiting_ <= slots.max_) {
      if (!taken_)
        --slots_.waiting_;
    }
    ~slot() {
      if (taken_)
        --slots_.waiting_;
    }
    slot(const slot&) = delete;
    slot& operator=(const slot&) = delete;
    explicit operator bool() const { return taken_; }

  private:
    poll_slots& slots_;
    bool taken_;
  };

private:
  std::size_t max_;
  std::atomic<std::size_t> waiting_{0};
};

void get_events(cdui::server& runtime, poll_slots& polls, const std::string& id,
                const httplib::Request& req, httplib::Response& res) {
  std::uint64_t cursor = 0;
  std::uint64_t limit = 1000;
  if (!query_number(req, res, "cursor", cursor) || !query_number(req, res, "limit", limit, 1))
    return;
  double wait = 0;
  if (req.has_param("wait")) {
    try {
      wait = std::stod(req.get_param_value("wait"));
    } catch (const std::exception&) {
      wait = -1;
    }
    if (!(wait >= 0)) {
      refuse(res, 400, "query parameter 'wait' must be a number of seconds, 0 or more");
      return;
    }
  }
  wait = std::min(wait, max_wait_seconds);
  std::optional<poll_slots::slot> slot;
  if (wait > 0 && !slot.emplace(polls))
    wait = 0;  // every slot is taken: answer at once, as with wait=0
  try {
    auto batch = runtime.events(id, cursor, std::chrono::milliseconds(static_cast<long>(wait * 1000)));
    json events = json::array();
    auto last = cursor;
    for (const auto& e : batch.events) {
      if (events.size() >= limit) {
        batch.finished = false;
        break;
      }
      events.push_back({{"cursor", e.cursor},
                        {"time_ms", e.time_ms},
                        {"type", e.type},
                        {"data", parse_or_null(e.data)}});
      last = e.cursor;
    }
    reply(res, 200, {{"run_id", id}, {"events", events}, {"cursor", last}, {"finished", batch.finished}});
  } catch (const std::invalid_argument& e) {
    refuse(res, 404, e.what());
  }
}

void get_metrics(cdui::server& runtime, const std::string& id, const httplib::Request& req,
                 httplib::Response& res) {
  auto format = req.has_param("format") ? req.get_param_value("format") : "json";
  if (format != "json" && format != "csv") {
    refuse(res, 400, "query parameter 'format' must be json or csv, not " + text::quoted(format));
    return;
  }
  auto points = runtime.metrics(id, req.get_param_value("name"));
  if (!points) {
    refuse(res, 404, "no run has the id '" + id + "'");
    return;
  }
  if (format == "csv") {
    std::ostringstream out;
    out.precision(17);
    out << "node,name,step,value,time_ms\n";
    for (const auto& p : *points)
      out << csv_field(p.node) << ',' << csv_field(p.name) << ',' << p.step << ',' << p.value << ','
          << p.time_ms << '\n';
    res.status = 200;
    res.set_content(out.str(), "text/csv");
    return;
  }
  json metrics = json::array();
  for (const auto& p : *points)
    metrics.push_back({{"node", p.node},
                       {"name", p.name},
                       {"step", p.step},
                       {"value", p.value},
                       {"time_ms", p.time_ms}});
  reply(res, 200, {{"run_id", id}, {"metrics", metrics}});
}

/// Prometheus' text format: runs by status, and per device the queue length, slot use and limit.
/// Seconds as /metrics writes them: fixed, to the millisecond (ostream's default would write a
/// start time as 1.718e+09).
std::string seconds_text(double s) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

double uptime_s(const cdui::server& runtime) {
  return static_cast<double>(std::max<std::int64_t>(0, now_ms() - runtime.started_ms())) / 1000.0;
}

/// GET /api/version: what this server runs and since when.
json version_json(const cdui::server& runtime) {
  return {{"version", cdui::version()},
          {"protocol", wire::protocol_version},
          {"started_ms", runtime.started_ms()},
          {"uptime_s", uptime_s(runtime)}};
}

/// /metrics' part on how long runs waited in their queues: a Prometheus histogram.
void write_queue_waits(std::ostream& out, const queue_wait_histogram& h) {
  out << "# HELP cdui_queue_wait_seconds How long runs waited in their queue before they started, "
         "since the server started.\n# TYPE cdui_queue_wait_seconds histogram\n";
  for (std::size_t i = 0; i < h.bounds.size(); ++i)
    out << "cdui_queue_wait_seconds_bucket{le=\"" << h.bounds[i] << "\"} " << h.buckets[i] << '\n';
  out << "cdui_queue_wait_seconds_bucket{le=\"+Inf\"} " << h.count << '\n'
      << "cdui_queue_wait_seconds_sum " << seconds_text(h.sum_s) << '\n'
      << "cdui_queue_wait_seconds_count " << h.count << '\n';
}

/// /metrics' part on runs by status and reason: queued ones by why they wait, failed ones by why
/// they failed.
void write_runs_by_reason(std::ostream& out, cdui::server& runtime, const run_queue_status& queue) {
  std::map<std::string, int> waiting;
  for (const auto& w : queue.waiting_runs)
    ++waiting[w.kind];
  out << "# HELP cdui_runs_by_reason Queued runs by why they wait, failed runs by why they "
         "failed.\n# TYPE cdui_runs_by_reason gauge\n";
  for (const auto& [reason, n] : waiting)
    out << "cdui_runs_by_reason{status=\"queued\",reason=\"" << reason << "\"} " << n << '\n';
  for (const auto& [reason, n] : runtime.failed_by_reason())
    out << "cdui_runs_by_reason{status=\"failed\",reason=\"" << reason << "\"} " << n << '\n';
}

std::string prometheus_text(cdui::server& runtime) {
  std::ostringstream out;
  out << "# HELP cdui_build_info The server's cdui version and wire protocol.\n"
         "# TYPE cdui_build_info gauge\n"
      << "cdui_build_info{version=\"" << cdui::version() << "\",protocol=\""
      << wire::protocol_version << "\"} 1\n"
      << "# HELP cdui_start_time_seconds When the server started, in seconds since the epoch.\n"
         "# TYPE cdui_start_time_seconds gauge\n"
      << "cdui_start_time_seconds " << seconds_text(static_cast<double>(runtime.started_ms()) / 1000.0)
      << '\n'
      << "# HELP cdui_uptime_seconds How long the server has run.\n"
         "# TYPE cdui_uptime_seconds gauge\n"
      << "cdui_uptime_seconds " << seconds_text(uptime_s(runtime)) << '\n';
  out << "# HELP cdui_runs Runs in the store, by status.\n# TYPE cdui_runs gauge\n";
  for (auto status : all_run_statuses)
    out << "cdui_runs{status=\"" << to_string(status) << "\"} "
        << runtime.runs(std::string{to_string(status)}, 1, 0).total << '\n';
  auto status = runtime.status(false);
  const auto& queues = status.queue.queues;
  out << "# HELP cdui_queue_length Runs waiting in a device's queue.\n"
         "# TYPE cdui_queue_length gauge\n";
  for (const auto& q : queues)
    out << "cdui_queue_length{device=\"" << q.device << "\"} " << q.waiting.size() << '\n';
  out << "# HELP cdui_slot_running Runs holding a device's slot.\n# TYPE cdui_slot_running gauge\n";
  for (const auto& q : queues)
    out << "cdui_slot_running{device=\"" << q.device << "\"} " << q.running.size() << '\n';
  out << "# HELP cdui_slot_limit Runs a device's slot admits at once.\n# TYPE cdui_slot_limit gauge\n";
  for (const auto& q : queues)
    out << "cdui_slot_limit{device=\"" << q.device << "\"} " << q.limit << '\n';
  out << "# HELP cdui_interactive_running Interactive runs executing.\n"
         "# TYPE cdui_interactive_running gauge\n"
      << "cdui_interactive_running " << status.queue.interactive.size() << '\n';
  out << "# HELP cdui_store_bytes Bytes of tensor storage an in-memory store holds.\n"
         "# TYPE cdui_store_bytes gauge\n";
  for (const auto& store : status.stores)
    out << "cdui_store_bytes{store=\"" << store.name << "\"} " << store.bytes << '\n';
  out << "# HELP cdui_store_max_bytes A store's byte budget (0: none).\n"
         "# TYPE cdui_store_max_bytes gauge\n";
  for (const auto& store : status.stores)
    out << "cdui_store_max_bytes{store=\"" << store.name << "\"} " << store.max_bytes << '\n';
  std::map<std::string, int> by_status{{"online", 0}, {"degraded", 0}, {"draining", 0},
                                       {"disconnected", 0}};
  for (const auto& w : status.workers.value_or(workers_status{}).workers)
    ++by_status[w.status];
  out << "# HELP cdui_workers Workers the server has seen since it started, by status.\n"
         "# TYPE cdui_workers gauge\n";
  for (const auto& [s, n] : by_status)
    out << "cdui_workers{status=\"" << s << "\"} " << n << '\n';
  if (status.workers && !status.workers->workers.empty()) {
    out << "# HELP cdui_worker_heartbeat_age_seconds Since a worker's last heartbeat.\n"
           "# TYPE cdui_worker_heartbeat_age_seconds gauge\n";
    for (const auto& w : status.workers->workers)
      out << "cdui_worker_heartbeat_age_seconds{worker=\"" << w.name << "\"} "
          << seconds_text(w.heartbeat_age_s) << '\n';
  }
  write_runs_by_reason(out, runtime, status.queue);
  write_queue_waits(out, status.queue.queue_waits);
  // Each card shared by memory, as GET /api/devices shows its ledger.
  auto memory = runtime.memory();
  if (!memory.cards.empty()) {
    out << "# HELP cdui_card_memory_bytes A card shared by memory: its total, free, reserved and "
           "running bytes, and what a new budget may take.\n"
           "# TYPE cdui_card_memory_bytes gauge\n";
    for (const auto& c : memory.cards)
      for (const auto& [what, bytes] : {std::pair{"total", c.total}, std::pair{"free", c.free},
                                        std::pair{"reserved", c.reserved}, std::pair{"running", c.running},
                                        std::pair{"may_take", c.may_take}})
        out << "cdui_card_memory_bytes{device=\"" << c.key << "\",kind=\"" << what << "\"} " << bytes
            << '\n';
  }
  if (const auto& b = status.bridge) {
    out << "# HELP cdui_bridge_messages_total Messages the ZeroMQ bridge received and sent.\n"
           "# TYPE cdui_bridge_messages_total counter\n"
        << "cdui_bridge_messages_total{direction=\"in\"} " << b->frames_in << '\n'
        << "cdui_bridge_messages_total{direction=\"out\"} " << b->frames_out << '\n'
        << "# HELP cdui_bridge_refused_total Messages the bridge refused, by reason.\n"
           "# TYPE cdui_bridge_refused_total counter\n";
    for (std::size_t i = 0; i < b->refused.size(); ++i)
      out << "cdui_bridge_refused_total{reason=\"" << wire::to_string(static_cast<wire::refusal>(i))
          << "\"} " << b->refused[i] << '\n';
  }
  return out.str();
}

void get_outputs(cdui::server& runtime, const std::string& id, httplib::Response& res) {
  auto info = runtime.info(id);
  if (!info) {
    refuse(res, 404, "no run has the id '" + id + "'");
    return;
  }
  auto options = parse_or_null(info->options);
  bool records = options.is_object() && options.value("record_outputs", false) == true;
  // A worker run's outputs stay on its worker: asked of it while it is connected.
  if (auto key = slot_key::parse(info->queue_key);
      records && is_final(info->status) && !key.local()) {
    const auto& worker = key.offerer;
    auto r = runtime.worker_outputs(id, worker);
    auto nodes = r.found ? json::parse(r.nodes_json, nullptr, false) : json(nullptr);
    if (r.found && nodes.is_object())
      reply(res, 200, {{"run_id", id}, {"worker", worker}, {"nodes", nodes}});
    else
      refuse(res, r.unavailable ? 503 : 404,
             r.found ? "worker '" + worker + "' sent outputs that are not JSON" : r.error);
    return;
  }
  if (auto nodes = runtime.recorded_outputs(id)) {
    reply(res, 200, {{"run_id", id}, {"nodes", json::parse(*nodes)}});
    return;
  }
  auto budget = storage::read_budget(storage::run_output_store_budget).budget;
  if (!options.is_object() || options.value("record_outputs", false) != true)
    refuse(res, 404, "run " + id + " does not record its outputs: submit it with options."
                     "record_outputs true (cdui run --record-outputs)");
  else if (!is_final(info->status))
    refuse(res, 404, "run " + id + " is " + std::string{to_string(info->status)}
                     + "; its outputs are recorded when it ends");
  else
    refuse(res, 404, "run " + id + "'s outputs are no longer in the run output store: it keeps the "
                     + std::to_string(budget.max_entries) + " most recently recorded runs"
                     + (budget.max_bytes > 0 ? " within " + std::to_string(budget.max_bytes
                                                                           / storage::bytes_per_mb)
                                                 + " MB (" + std::string{budget.env_var} + ")"
                                             : std::string{})
                     + ", in this server's memory only, until it restarts");
}

} // namespace

void mount_http_api(httplib::Server& http, cdui::server& runtime, http_api_options options) {
  auto& rt = runtime;
  auto gate = std::make_shared<const access_gate>(
    access_gate{{options.token, options.reads_need_token, options.cookie_name, options.sessions.get(),
                 options.host_names},
                options.sessions});
  auto polls = std::make_shared<poll_slots>(options.max_waiting_polls);
  // Before any route, and before a body is read: the request's strings, and the token for reads
  // (the dashboard's page itself loads without it, to say how to sign in).
  http.set_pre_routing_handler([gate](const httplib::Request& req, httplib::Response& res) {
    if (auto refusal = non_utf8_refusal(req); !refusal.empty()) {
      refuse(res, 400, refusal);
      return httplib::Server::HandlerResponse::Handled;
    }
    bool read = req.method == "GET" || req.method == "HEAD";
    if (read && !(gate->sessions && is_dashboard_page(req.path))
        && !authorized(req, res, *gate, request_kind::read))
      return httplib::Server::HandlerResponse::Handled;
    return httplib::Server::HandlerResponse::Unhandled;
  });
  if (options.sessions)
    mount_dashboard(http, options.sessions, gate->rules);
  http.Post("/api/runs", [&rt, gate](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req, res, *gate))
      post_run(rt, req, res);
  });
  http.Post("/api/sweeps", [&rt, gate](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req, res, *gate))
      post_sweep(rt, req, res);
  });
  http.Get("/api/sweeps", [&rt](const httplib::Request& req, httplib::Response& res) {
    reply_list(req, res, "sweeps", rt.sweeps(),
               [&](const sweep_record& sweep) { return sweep_summary_json(sweep, rt.sweep_runs(sweep.id)); });
  });
  http.Get(R"(/api/sweeps/([^/]+))", [&rt](const httplib::Request& req, httplib::Response& res) {
    get_sweep(rt, req.matches[1], false, res);
  });
  http.Get(R"(/api/sweeps/([^/]+)/results\.csv)", [&rt](const httplib::Request& req, httplib::Response& res) {
    get_sweep(rt, req.matches[1], true, res);
  });
  http.Post(R"(/api/sweeps/([^/]+)/cancel)", [&rt, gate](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res, *gate))
      return;
    std::string id = req.matches[1];
    reply_cancel(res, "sweep", id, rt.cancel_sweep(id), [&] { return sweep_json(*rt.sweep(id), rt.sweep_runs(id)); });
  });
  http.Post("/api/studies", [&rt, gate](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req, res, *gate))
      post_study(rt, req, res);
  });
  http.Get("/api/studies", [&rt](const httplib::Request& req, httplib::Response& res) {
    reply_list(req, res, "studies", rt.studies(),
               [&](const study_record& study) { return study_summary_json(study, study_trials(rt, study)); });
  });
  http.Get(R"(/api/studies/([^/]+))", [&rt](const httplib::Request& req, httplib::Response& res) {
    auto study = rt.study(req.matches[1]);
    if (!study) {
      refuse(res, 404, "no study has the id '" + std::string{req.matches[1]} + "'");
      return;
    }
    reply(res, 200, study_json(*study, study_trials(rt, *study)));
  });
  http.Post(R"(/api/studies/([^/]+)/cancel)", [&rt, gate](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res, *gate))
      return;
    std::string id = req.matches[1];
    reply_cancel(res, "study", id, rt.cancel_study(id), [&] {
      auto study = rt.study(id);
      return study_json(*study, study_trials(rt, *study));
    });
  });
  http.Post("/api/estimate", [gate](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req, res, *gate))
      post_estimate(req, res);
  });
  http.Get("/api/runs", [&rt](const httplib::Request& req, httplib::Response& res) {
    get_runs(rt, req, res);
  });
  http.Get(R"(/api/runs/([^/]+))", [&rt](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    if (auto info = rt.info(id))
      reply(res, 200, run_object(rt, *info));
    else
      refuse(res, 404, "no run has the id '" + id + "'");
  });
  http.Delete(R"(/api/runs/([^/]+))",
              [&rt, gate](const httplib::Request& req, httplib::Response& res) {
                if (!authorized(req, res, *gate))
                  return;
                std::string id = req.matches[1];
                switch (rt.erase(id)) {
                case erase_result::erased:
                  reply(res, 200, {{"run_id", id}, {"deleted", true}});
                  break;
                case erase_result::active:
                  refuse(res, 409, "run " + id + " is queued or running; cancel it first");
                  break;
                case erase_result::unknown:
                  refuse(res, 404, "no run has the id '" + id + "'");
                  break;
                }
              });
  http.Post(R"(/api/runs/([^/]+)/cancel)",
            [&rt, gate](const httplib::Request& req, httplib::Response& res) {
              if (!authorized(req, res, *gate))
                return;
              std::string id = req.matches[1];
              auto before = rt.info(id);
              if (!before) {
                refuse(res, 404, "no run has the id '" + id + "'");
                return;
              }
              bool cancelled = rt.cancel(id);
              auto info = rt.info(id);
              // "was": what the cancel found; "status": now (a running run may already be done).
              reply(res, 200, {{"run_id", id},
                               {"cancelled", cancelled},
                               {"was", to_string(before->status)},
                               {"status", to_string(info->status)}});
            });
  http.Get(R"(/api/runs/([^/]+)/events)",
           [&rt, polls](const httplib::Request& req, httplib::Response& res) {
             get_events(rt, *polls, req.matches[1], req, res);
           });
  http.Get(R"(/api/runs/([^/]+)/metrics)", [&rt](const httplib::Request& req, httplib::Response& res) {
    get_metrics(rt, req.matches[1], req, res);
  });
  http.Get(R"(/api/runs/([^/]+)/outputs)", [&rt](const httplib::Request& req, httplib::Response& res) {
    get_outputs(rt, req.matches[1], res);
  });
  http.Delete(R"(/api/sessions/([^/]+))",
              [&rt, gate](const httplib::Request& req, httplib::Response& res) {
                if (!authorized(req, res, *gate))
                  return;
                std::string session = req.matches[1];
                reply(res, 200, {{"session", session}, {"closed", rt.close_session(session)}});
              });
  http.Get("/api/health", [&rt](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    reply(res, 200, health_json(rt.caches()));
  });
  http.Post(R"(/api/workers/([^/]+)/(drain|undrain))",
            [&rt, gate](const httplib::Request& req, httplib::Response& res) {
              if (!authorized(req, res, *gate))
                return;
              std::string name = req.matches[1];
              bool draining = req.matches[2] == "drain";
              if (!rt.drain_worker(name, draining)) {
                refuse(res, 404, "no worker named '" + name + "' has connected to this server");
                return;
              }
              reply(res, 200, {{"worker", name}, {"draining", draining}});
            });
  http.Post("/api/workers/enroll", [&rt, gate](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req, res, *gate))
      post_enroll(rt, req, res);
  });
  http.Post(R"(/api/workers/([^/]+)/rekey)",
            [&rt, gate](const httplib::Request& req, httplib::Response& res) {
              if (!authorized(req, res, *gate))
                return;
              auto body = enrollment_body(req, res, false);
              if (!body)
                return;
              auto e = rt.rekey_worker(req.matches[1]);
              if (!refused_enrollment(res, e))
                reply(res, 200, credential_json(rt, e, req, *body));
            });
  http.Delete(R"(/api/workers/([^/]+))",
              [&rt, gate](const httplib::Request& req, httplib::Response& res) {
                if (!authorized(req, res, *gate))
                  return;
                auto e = rt.remove_worker(req.matches[1]);
                if (!refused_enrollment(res, e))
                  reply(res, 200, {{"worker", e.name}, {"removed", true}});
              });
  http.Put(R"(/api/devices/([^/]+)/sharing)",
           [&rt, gate](const httplib::Request& req, httplib::Response& res) {
             if (authorized(req, res, *gate))
               put_sharing(rt, "", req.matches[1], req, res);
           });
  http.Put(R"(/api/workers/([^/]+)/devices/([^/]+)/sharing)",
           [&rt, gate](const httplib::Request& req, httplib::Response& res) {
             if (authorized(req, res, *gate))
               put_sharing(rt, req.matches[1], req.matches[2], req, res);
           });
  http.Get("/api/devices", [&rt](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, devices_json(rt.queue(false), rt.memory()));
  });
  http.Get("/api/workers", [&rt](const httplib::Request& req, httplib::Response& res) {
    get_workers(rt, req, res);
  });
  http.Get("/api/queues", [&rt](const httplib::Request& req, httplib::Response& res) {
    std::uint64_t most = default_page;
    if (!query_number(req, res, "limit", most, 1))
      return;
    reply(res, 200, queues_json(rt.queue(false), std::min<std::uint64_t>(most, max_page)));
  });
  http.Get("/api/status", [&rt](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(status_body(rt.status()), "application/json");
  });
  http.Get("/api/version", [&rt](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, version_json(rt));
  });
  http.Get("/metrics", [&rt](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(prometheus_text(rt), "text/plain; version=0.0.4");
  });
  // Errors cpp-httplib answers itself (no route, an unreadable request) get a JSON detail too.
  // Neither handler may throw: httplib calls them where an exception ends the process.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) noexcept {
    if (!res.body.empty())
      return;
    try {
      auto request = text::to_utf8(req.method + " " + req.path);
      if (res.status == 404)
        refuse(res, 404, "no such endpoint: " + request);
      else
        refuse(res, res.status, request + ": the request could not be read (HTTP "
                                  + std::to_string(res.status) + ": a malformed request line, "
                                  "header or body, or one not sent in time)");
    } catch (...) {
      res.set_content(R"({"detail":"the request could not be answered"})", "application/json");
    }
  });
  http.set_exception_handler(
    [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) noexcept {
      try {
        auto detail = text::to_utf8(req.method + " " + req.path + " failed: "
                                    + text::what_of(ep, "unknown error"));
        spdlog::error("HTTP {}", detail);
        refuse(res, 500, detail);
      } catch (...) {
        res.status = 500;
        res.set_content(R"({"detail":"the server failed to answer this request"})",
                        "application/json");
      }
    });
}

} // namespace cdui::apps
