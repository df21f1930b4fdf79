#include "apps/client_commands.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "actors/policy/run_options.hpp"
#include "actors/policy/worker_table.hpp"
#include "apps/http_api.hpp"
#include "apps/interrupt.hpp"
#include "apps/progress_printer.hpp"
#include "apps/run_report.hpp"
#include "devices/memory.hpp"
#include "messages/json_text.hpp"
#include "storage/home.hpp"
#include "storage/run_store.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;
using clock = std::chrono::steady_clock;

/// The longest one long-poll waits, so that Ctrl+C and --timeout are noticed within it.
constexpr double poll_seconds = 0.5;

/// The `detail` of an error answer, else its body.
std::string detail_of(const httplib::Response& res) {
  auto j = json::parse(res.body, nullptr, false);
  if (j.is_object() && j["detail"].is_string())
    return j["detail"].get<std::string>();
  return "HTTP " + std::to_string(res.status) + ": " + res.body;
}

std::string no_answer(const server_connection& server, const httplib::Result& result) {
  return "the server at " + server.address.http_url()
         + " did not answer (" + httplib::to_string(result.error()) + ")";
}

/// A run as GET /api/runs/{id} describes it.
run_info run_from_json(const json& j) {
  run_info r;
  r.id = j.value("run_id", std::string{});
  r.name = j.value("name", std::string{});
  r.status = parse_run_status(j.value("status", std::string{})).value_or(run_status::failed);
  r.queue_key = j.value("queue_key", std::string{});
  r.queue_position = j.value("queue_position", 0u);
  if (j["waiting_reason"].is_string())
    r.waiting_reason = j["waiting_reason"].get<std::string>();
  if (j["error"].is_string())
    r.error = j["error"].get<std::string>();
  if (j["options"].is_object())
    r.options = json_text(j["options"]);
  auto ms = [&](const char* key) { return j[key].is_number() ? j[key].get<std::int64_t>() : 0; };
  r.created_ms = ms("created_ms");
  r.started_ms = ms("started_ms");
  r.finished_ms = ms("finished_ms");
  if (!j["final_metrics"].is_null())
    r.final_metrics = json_text(j["final_metrics"]);
  return r;
}

std::string local_time(std::int64_t ms) {
  if (ms == 0)
    return "-";
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

/// The run's memory budget per card as its options give it: "800.0 MiB", "1.20 GiB meas." (the
/// graph's measured default), "512.0 MiB est." (the static estimate); "-" without one.
std::string budget_text(const run_info& r) {
  run_request options;
  if (!policy::apply_options(json::parse(r.options, nullptr, false), options).empty()
      || options.memory_bytes == 0)
    return "-";
  const auto& source = options.memory_source;
  return devices::format_bytes(options.memory_bytes)
         + (source == "measured" ? " meas." : source == "estimate" ? " est." : "");
}

/// Why a queued run waits beyond its place, or the first line of why a run failed; "" otherwise.
std::string reason_text(const run_info& r) {
  auto text = r.status == run_status::queued ? r.waiting_reason : r.error;
  text = text.substr(0, text.find('\n'));
  constexpr std::size_t shown = 100;
  return text.size() > shown ? text.substr(0, shown - 1) + "~" : text;
}

void print_runs(const std::vector<run_info>& runs, std::uint64_t total) {
  // DEVICE is as wide as its widest key (a worker's "gpu-box/cuda:1"), so the columns stay aligned.
  int device = 8;
  for (const auto& r : runs)
    device = std::max(device, static_cast<int>(r.queue_key.size()));
  std::printf("%-8s  %-20s  %-11s  %-*s  %-5s  %-15s  %-19s  %-7s  %s\n", "ID", "NAME", "STATUS",
              device, "DEVICE", "QUEUE", "BUDGET", "CREATED", "SECONDS", "REASON");
  for (const auto& r : runs) {
    auto name = r.name.size() > 20 ? r.name.substr(0, 19) + "~" : r.name;
    auto queue = r.queue_position > 0 ? std::to_string(r.queue_position) : std::string{"-"};
    std::string seconds = "-";
    if (r.started_ms > 0) {
      auto end = r.finished_ms > 0 ? r.finished_ms
                                   : std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count();
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(end - r.started_ms) / 1000.0);
      seconds = buf;
    }
    std::printf("%-8s  %-20s  %-11s  %-*s  %-5s  %-15s  %-19s  %-7s  %s\n", r.id.c_str(), name.c_str(),
                std::string{to_string(r.status)}.c_str(), device, r.queue_key.c_str(), queue.c_str(),
                budget_text(r).c_str(), local_time(r.created_ms).c_str(), seconds.c_str(),
                reason_text(r).c_str());
  }
  if (total > runs.size())
    std::printf("(%zu of %llu runs; --limit shows more)\n", runs.size(),
                static_cast<unsigned long long>(total));
}

} // namespace

httplib::Client http_client(const server_connection& server) {
  httplib::Client c{server.address.host, server.address.port};
  c.set_connection_timeout(std::chrono::seconds(5));
  c.set_tcp_nodelay(true);  // see apps/server_command.cpp
  c.set_read_timeout(std::chrono::seconds(30));
  c.set_default_headers({{token_header, server.token}});
  return c;
}


std::optional<server_connection> find_server(const std::filesystem::path& home) {
  if (!storage::home_lock::server_running(home))
    return std::nullopt;
  auto address = storage::read_server_json(home);
  auto token = storage::read_token(home);
  if (!address || !token)
    return std::nullopt;
  return server_connection{*address, *token};
}

int remote_run(const server_connection& server, const run_request& request,
               const run_command_options& options) {
  auto started = clock::now();
  auto timed_out = [&] {
    return options.timeout_s
           && std::chrono::duration<double>(clock::now() - started).count() >= *options.timeout_s;
  };
  json body{{"graph", json::parse(request.graph_json)},
            {"name", request.name},
            {"options", policy::options_json(request)}};
  auto client = http_client(server);
  auto res = client.Post("/api/runs", json_text(body), "application/json");
  if (!res) {
    std::fprintf(stderr, "cdui: %s\n", no_answer(server, res).c_str());
    return exit_run_failed;
  }
  if (res->status != 200) {
    std::fprintf(stderr, "cdui: the server refused the run: %s\n", detail_of(*res).c_str());
    // A 400/422 is about this command line or graph; 403 and 503 are about the server.
    return res->status == 400 || res->status == 422 ? exit_usage : exit_run_failed;
  }
  auto submitted = json::parse(res->body);
  auto id = submitted["run_id"].get<std::string>();
  std::printf("run %s (%s) submitted to the server at %s, folder %s\n", id.c_str(),
              request.name.c_str(), server.address.http_url().c_str(),
              (storage::default_home() / "runs" / id).c_str());
  if (options.detach) {
    std::printf("detached: `cdui runs` lists it, `cdui cancel %s` stops it\n", id.c_str());
    return exit_ok;
  }
  if (submitted.value("status", std::string{}) == "queued")
    std::printf("queued, position %u on %s\n", submitted.value("queue_position", 0u),
                submitted.value("queue_key", std::string{}).c_str());
  std::fflush(stdout);

  catch_interrupts();
  progress_printer printer{stdout, ::isatty(STDOUT_FILENO) == 1};
  std::uint64_t cursor = 0;
  for (;;) {
    if (interrupted() || timed_out()) {
      printer.close_line();
      std::printf("%s: stopped following run %s; it continues on the server (`cdui cancel %s` "
                  "stops it)\n",
                  interrupted() ? "interrupted" : "timeout", id.c_str(), id.c_str());
      std::fflush(stdout);
      return interrupted() ? exit_interrupted : exit_run_failed;
    }
    auto path = "/api/runs/" + id + "/events?cursor=" + std::to_string(cursor)
                + "&wait=" + std::to_string(poll_seconds);
    auto asked = clock::now();
    auto page = client.Get(path.c_str());
    // 503: this machine holds as many connections as the server takes from one address.
    bool busy = page && page->status == 503;
    if (!page || (page->status != 200 && !busy)) {
      printer.close_line();
      std::fprintf(stderr, "cdui: following run %s: %s\n", id.c_str(),
                   page ? detail_of(*page).c_str() : no_answer(server, page).c_str());
      return exit_run_failed;
    }
    auto j = busy ? json::object() : json::parse(page->body);
    for (const auto& e : j["events"]) {
      printer.print({e["cursor"].get<std::uint64_t>(), e["time_ms"].get<std::int64_t>(),
                     e["type"].get<std::string>(), json_text(e["data"])});
      cursor = e["cursor"].get<std::uint64_t>();
    }
    if (j["finished"] == true)
      break;
    // A busy server answers at once (every long-poll slot taken) or with 503: ask again after the
    // wait asked for, not in a tight loop.
    if (j["events"].empty())
      std::this_thread::sleep_until(asked + std::chrono::duration<double>(poll_seconds));
  }
  printer.close_line();
  auto final_res = client.Get(("/api/runs/" + id).c_str());
  if (!final_res || final_res->status != 200) {
    std::fprintf(stderr, "cdui: run %s ended, but its state could not be read: %s\n", id.c_str(),
                 final_res ? detail_of(*final_res).c_str() : no_answer(server, final_res).c_str());
    return exit_run_failed;
  }
  auto final_state = run_from_json(json::parse(final_res->body));
  print_run_end(final_state);
  return final_state.status == run_status::succeeded ? exit_ok : exit_run_failed;
}

int runs_command(const runs_options& options) {
  auto home = storage::default_home();
  if (auto server = find_server(home)) {
    auto client = http_client(*server);
    auto path = "/api/runs?limit=" + std::to_string(options.limit)
                + (options.status.empty() ? "" : "&status=" + options.status);
    auto res = client.Get(path.c_str());
    if (!res) {
      std::fprintf(stderr, "cdui: %s\n", no_answer(*server, res).c_str());
      return exit_run_failed;
    }
    if (res->status != 200) {
      std::fprintf(stderr, "cdui: %s\n", detail_of(*res).c_str());
      return exit_usage;
    }
    auto page = json::parse(res->body);
    std::vector<run_info> runs;
    for (const auto& r : page["runs"])
      runs.push_back(run_from_json(r));
    print_runs(runs, page["total"].get<std::uint64_t>());
    return exit_ok;
  }
  std::optional<run_status> filter;
  if (!options.status.empty() && !(filter = parse_run_status(options.status))) {
    std::fprintf(stderr, "cdui: --status '%s' is not one of queued, running, succeeded, failed, "
                         "cancelled, interrupted\n", options.status.c_str());
    return exit_usage;
  }
  auto db = home / "cdui.db";
  if (!std::filesystem::exists(db)) {
    std::printf("no runs on %s yet\n", home.c_str());
    return exit_ok;
  }
  try {
    // No server: read the store itself (SQLite lets this process read while an embedded run writes).
    storage::run_store store{db};
    auto page = store.list(filter, options.limit, 0);
    print_runs(page.runs, page.total);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cdui: %s\n", e.what());
    return exit_run_failed;
  }
  return exit_ok;
}

int cancel_command(const std::string& run_id) {
  auto home = storage::default_home();
  auto server = find_server(home);
  if (!server) {
    std::fprintf(stderr, "cdui: no cdui server is running on %s; a run on the embedded runtime is "
                         "cancelled with Ctrl+C in its terminal\n", home.c_str());
    return exit_run_failed;
  }
  auto client = http_client(*server);
  auto res = client.Post(("/api/runs/" + run_id + "/cancel").c_str(), "", "application/json");
  if (!res) {
    std::fprintf(stderr, "cdui: %s\n", no_answer(*server, res).c_str());
    return exit_run_failed;
  }
  if (res->status != 200) {
    std::fprintf(stderr, "cdui: %s\n", detail_of(*res).c_str());
    return exit_run_failed;
  }
  auto j = json::parse(res->body);
  auto status = j.value("status", std::string{});
  if (j["cancelled"] != true)
    std::printf("run %s was not cancelled: it had already ended (%s) or was being cancelled\n",
                run_id.c_str(), status.c_str());
  else if (j.value("was", std::string{}) == "queued")
    std::printf("run %s cancelled before it started\n", run_id.c_str());
  else
    std::printf("run %s: cancel requested; it stops before its next batch\n", run_id.c_str());
  return exit_ok;
}

int worker_action_command(worker_action action, const std::string& name,
                          const std::string& server_host, const std::string& device) {
  if (!policy::is_valid_worker_name(name)) {
    std::fprintf(stderr, "cdui: '%s' is not a worker name (%s)\n", name.c_str(),
                 policy::worker_name_rule);
    return exit_usage;
  }
  auto home = storage::default_home();
  auto server = find_server(home);
  if (!server) {
    std::fprintf(stderr, "cdui: no cdui server is running on %s\n", home.c_str());
    return exit_run_failed;
  }
  json body = json::object();
  if (!server_host.empty())
    body["server_host"] = server_host;
  auto client = http_client(*server);
  auto res = [&]() -> httplib::Result {
    switch (action) {
    case worker_action::enroll:
      body["name"] = name;
      return client.Post("/api/workers/enroll", json_text(body), "application/json");
    case worker_action::rekey:
      return client.Post(("/api/workers/" + name + "/rekey").c_str(), json_text(body),
                         "application/json");
    case worker_action::remove:
      return client.Delete(("/api/workers/" + name).c_str());
    case worker_action::share:
    case worker_action::exclusive:
      return client.Put(("/api/workers/" + name + "/devices/" + device + "/sharing").c_str(),
                        json_text({{"mode", action == worker_action::share ? "shared" : "exclusive"}}),
                        "application/json");
    case worker_action::drain:
    case worker_action::undrain:
      break;
    }
    auto verb = action == worker_action::drain ? "/drain" : "/undrain";
    return client.Post(("/api/workers/" + name + verb).c_str(), "", "application/json");
  }();
  if (!res) {
    std::fprintf(stderr, "cdui: %s\n", no_answer(*server, res).c_str());
    return exit_run_failed;
  }
  if (res->status != 200) {
    std::fprintf(stderr, "cdui: %s\n", detail_of(*res).c_str());
    return res->status == 400 ? exit_usage : exit_run_failed;
  }
  auto j = json::parse(res->body, nullptr, false);
  switch (action) {
  case worker_action::enroll:
  case worker_action::rekey:
    std::printf("worker '%s' %s; on its machine, run (the credential is shown this once, the server "
                "keeps only its hash):\n\n  %s\n",
                name.c_str(), action == worker_action::enroll ? "enrolled" : "re-keyed (its old credential no longer joins)",
                j["command"].get<std::string>().c_str());
    if (j["warning"].is_string())
      std::fprintf(stderr, "\ncdui: warning: %s\n", j["warning"].get<std::string>().c_str());
    break;
  case worker_action::remove:
    std::printf("worker '%s' removed: its credential is revoked, it is disconnected, and its runs "
                "(running and queued) failed\n", name.c_str());
    break;
  case worker_action::drain:
    std::printf("worker '%s' drains: it takes no new runs; its running runs finish\n", name.c_str());
    break;
  case worker_action::share:
    std::printf("%s on worker '%s' is shared by memory: runs there declare a budget "
                "(--memory-gib) or get their graph's measured peak + 20%%\n", device.c_str(), name.c_str());
    break;
  case worker_action::exclusive:
    std::printf("%s on worker '%s' is exclusive: one run at a time\n", device.c_str(), name.c_str());
    break;
  case worker_action::undrain:
    std::printf("worker '%s' takes runs again\n", name.c_str());
    break;
  }
  return exit_ok;
}

} // namespace cdui::apps
