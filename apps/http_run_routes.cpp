// The HTTP API's runs (docs/http-api.md#runs): submit, list, read, cancel, delete, a run's
// events (a long-poll), metrics and outputs; and closing an interactive session.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "actors/policy/run_options.hpp"
#include "actors/policy/worker_table.hpp"
#include "actors/server/server.hpp"
#include "apps/http_resources.hpp"
#include "apps/run_json.hpp"
#include "apps/text_table.hpp"
#include "messages/slot_key.hpp"
#include "messages/text.hpp"
#include "storage/lru_store.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;

/// The longest a long-poll waits, whatever `wait` asks for.
constexpr double max_wait_seconds = 60.0;

/// The run object (run_json), with a running run's latest `progress` event: where it is now, which
/// a page of runs shows without reading every run's events.
json run_object(cdui::server& runtime, const run_info& run) {
  auto j = run_json(run);
  auto progress = run.status == run_status::running ? runtime.last_event(run.id, "progress")
                                                    : std::nullopt;
  j["progress"] = progress ? parse_or_null(progress->data) : json(nullptr);
  return j;
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
  auto page = runtime.runs(req.get_param_value("status"), worker, device, asked.page->limit, asked.page->offset);
  if (!page) {
    auto error = page.error();
    if (error.kind == error_kind::refused)
      error.message = "query parameter 'status': " + error.message;
    refuse(res, error);
    return;
  }
  json runs = json::array();
  for (const auto& r : page->runs)
    runs.push_back(run_object(runtime, r));
  json answer{{"runs", runs}};
  answer.update(page_fields(*asked.page, page->total));
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
  auto batch = runtime.events(id, cursor, std::chrono::milliseconds(static_cast<long>(wait * 1000)));
  if (!batch) {
    refuse(res, batch.error());
    return;
  }
  json events = json::array();
  auto last = cursor;
  bool finished = batch->finished;
  for (const auto& e : batch->events) {
    if (events.size() >= limit) {
      finished = false;
      break;
    }
    events.push_back({{"cursor", e.cursor}, {"time_ms", e.time_ms}, {"type", e.type}, {"data", parse_or_null(e.data)}});
    last = e.cursor;
  }
  reply(res, 200, {{"run_id", id}, {"events", events}, {"cursor", last}, {"finished", finished}});
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
    refuse(res, points.error());
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

void get_outputs(cdui::server& runtime, const std::string& id, httplib::Response& res) {
  auto info = runtime.info(id);
  if (!info) {
    refuse(res, info.error());
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

void add_run_routes(route_table& routes, cdui::server& runtime, std::size_t max_waiting_polls) {
  auto& rt = runtime;
  auto polls = std::make_shared<poll_slots>(max_waiting_polls);
  routes.post("/api/runs", [&rt](const httplib::Request& req, httplib::Response& res) {
    post_run(rt, req, res);
  });
  routes.get("/api/runs", route_access::read, [&rt](const httplib::Request& req, httplib::Response& res) {
    get_runs(rt, req, res);
  });
  routes.get(R"(/api/runs/([^/]+))", route_access::read, [&rt](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    if (auto info = rt.info(id))
      reply(res, 200, run_object(rt, *info));
    else
      refuse(res, info.error());
  });
  routes.del(R"(/api/runs/([^/]+))", [&rt](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    auto erased = rt.erase(id);
    if (!erased) {
      refuse(res, erased.error());
      return;
    }
    switch (*erased) {
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
  routes.post(R"(/api/runs/([^/]+)/cancel)", [&rt](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    auto before = rt.info(id);
    if (!before) {
      refuse(res, before.error());
      return;
    }
    bool cancelled = rt.cancel(id);
    auto info = rt.info(id);
    // "was": what the cancel found; "status": now (a running run may already be done).
    reply(res, 200, {{"run_id", id},
                     {"cancelled", cancelled},
                     {"was", to_string(before->status)},
                     {"status", to_string((info ? *info : *before).status)}});
  });
  routes.get(R"(/api/runs/([^/]+)/events)", route_access::read,
             [&rt, polls](const httplib::Request& req, httplib::Response& res) {
               get_events(rt, *polls, req.matches[1], req, res);
             });
  routes.get(R"(/api/runs/([^/]+)/metrics)", route_access::read,
             [&rt](const httplib::Request& req, httplib::Response& res) {
               get_metrics(rt, req.matches[1], req, res);
             });
  routes.get(R"(/api/runs/([^/]+)/outputs)", route_access::read,
             [&rt](const httplib::Request& req, httplib::Response& res) {
               get_outputs(rt, req.matches[1], res);
             });
  routes.del(R"(/api/sessions/([^/]+))", [&rt](const httplib::Request& req, httplib::Response& res) {
    std::string session = req.matches[1];
    reply(res, 200, {{"session", session}, {"closed", rt.close_session(session)}});
  });
}

} // namespace cdui::apps
