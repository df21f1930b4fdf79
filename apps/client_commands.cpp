#include "apps/client_commands.hpp"

#include <chrono>
#include <cstdio>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "actors/policy/run_options.hpp"
#include "actors/policy/worker_table.hpp"
#include "apps/http_api.hpp"
#include "apps/inspect_commands.hpp"
#include "messages/json_text.hpp"
#include "storage/home.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;

} // namespace

std::string detail_of(const httplib::Response& res) {
  auto j = json::parse(res.body, nullptr, false);
  if (j.is_object() && j["detail"].is_string())
    return j["detail"].get<std::string>();
  return "HTTP " + std::to_string(res.status) + ": " + res.body.substr(0, 200);
}

std::string no_answer(const server_connection& server, const httplib::Result& result) {
  return "the server at " + server.address.http_url()
         + " did not answer (" + httplib::to_string(result.error()) + ")";
}

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
    // Attached, the run's events say it; detached, this is the only word of it.
    for (const auto& w : submitted.value("warnings", json::array()))
      std::printf("warning (%s): %s\n", w.value("kind", std::string{}).c_str(),
                  w.value("message", std::string{}).c_str());
    std::printf("detached: `cdui follow %s` shows its progress, `cdui logs -f %s` its log, "
                "`cdui cancel %s` stops it\n", id.c_str(), id.c_str(), id.c_str());
    return exit_ok;
  }
  // Position 0: not in a queue any more (placed, or refused by a card's ledger as it was queued).
  if (submitted.value("status", std::string{}) == "queued" && submitted.value("queue_position", 0u) > 0)
    std::printf("queued, position %u on %s\n", submitted.value("queue_position", 0u),
                submitted.value("queue_key", std::string{}).c_str());
  std::fflush(stdout);

  auto reader = run_reader::of_server(server);
  return follow_run(*reader, id, options.timeout_s);
}

namespace {

/// Cancels the run `word` names; the exit code.
int cancel_one(run_reader& reader, httplib::Client& client, const server_connection& server,
               const std::string& word) {
  auto found = reader.find(word);
  if (auto* e = std::get_if<cli_error>(&found)) {
    std::fprintf(stderr, "cdui: %s\n", e->message.c_str());
    return e->exit_code;
  }
  const auto& id = std::get<run_info>(found).id;
  auto res = client.Post(("/api/runs/" + id + "/cancel").c_str(), "", "application/json");
  if (!res) {
    std::fprintf(stderr, "cdui: %s\n", no_answer(server, res).c_str());
    return exit_run_failed;
  }
  if (res->status != 200) {
    std::fprintf(stderr, "cdui: run %s: %s\n", id.c_str(), detail_of(*res).c_str());
    return exit_run_failed;
  }
  auto j = json::parse(res->body, nullptr, false);
  if (!j.is_object()) {
    std::fprintf(stderr, "cdui: run %s: the server's answer is no JSON object\n", id.c_str());
    return exit_run_failed;
  }
  auto status = j.value("status", json()).is_string() ? j["status"].get<std::string>() : "?";
  if (j["cancelled"] != true)
    std::printf("run %s was not cancelled: it had already ended (%s) or was being cancelled\n",
                id.c_str(), status.c_str());
  else if (j["was"] == "queued")
    std::printf("run %s cancelled before it started\n", id.c_str());
  else
    std::printf("run %s: cancel requested; it stops before its next batch\n", id.c_str());
  return exit_ok;
}

} // namespace

int cancel_command(const std::vector<std::string>& runs) {
  auto home = storage::default_home();
  auto server = find_server(home);
  if (!server) {
    std::fprintf(stderr, "cdui: no cdui server is running on %s; a run on the embedded runtime is "
                         "cancelled with Ctrl+C in its terminal\n", home.c_str());
    return exit_run_failed;
  }
  auto reader = run_reader::of_server(*server);
  auto client = http_client(*server);
  int code = exit_ok;
  for (const auto& word : runs) {
    auto one = cancel_one(*reader, client, *server, word);
    if (code == exit_ok)
      code = one;
  }
  return code;
}

int worker_action_command(worker_action action, const std::string& name,
                          const std::string& server_host, const std::string& device) {
  // A fleet's pattern ("slurm-*", docs/workers.md#fleets) is enrolled, re-keyed and removed as a
  // worker is; drains and sharing are each worker's.
  bool fleet = policy::is_fleet_pattern(name);
  bool by_enrollment = action == worker_action::enroll || action == worker_action::rekey
                       || action == worker_action::remove;
  if (!policy::is_valid_worker_name(name) && !(fleet && by_enrollment)) {
    std::fprintf(stderr, "cdui: '%s' is not %s (%s)\n", name.c_str(),
                 by_enrollment ? "a worker name or a fleet's pattern" : "a worker name",
                 by_enrollment ? policy::enrollment_rule : policy::worker_name_rule);
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
    std::printf("%s '%s' %s; on %s, run (the credential is shown this once, the server keeps only "
                "its hash):\n\n  %s\n",
                fleet ? "fleet" : "worker", name.c_str(),
                action == worker_action::enroll ? "enrolled" : "re-keyed (its old credential no longer joins)",
                fleet ? "each of its machines" : "its machine", j["command"].get<std::string>().c_str());
    if (j["warning"].is_string())
      std::fprintf(stderr, "\ncdui: warning: %s\n", j["warning"].get<std::string>().c_str());
    break;
  case worker_action::remove:
    if (fleet)
      std::printf("fleet '%s' removed: its credential is revoked, and each worker that joined by it is "
                  "removed (disconnected, its runs failed)\n", name.c_str());
    else
      std::printf("worker '%s' removed: its credential is revoked, it is disconnected, and its runs "
                  "(running and queued) failed\n", name.c_str());
    break;
  case worker_action::drain:
    std::printf("worker '%s' drains: it takes no new runs; its running runs finish\n", name.c_str());
    break;
  case worker_action::share:
    std::printf("%s on worker '%s' is shared by memory: runs there declare a budget "
                "(--memory) or get their graph's measured peak + 20%%\n", device.c_str(), name.c_str());
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
