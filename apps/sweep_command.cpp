#include "apps/sweep_command.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/client_commands.hpp"
#include "apps/interrupt.hpp"
#include "apps/run_command.hpp"
#include "apps/study_json.hpp"
#include "apps/sweep_json.hpp"
#include "messages/json_text.hpp"
#include "storage/home.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;

/// How often the live table asks the server.
constexpr std::chrono::milliseconds poll_interval{500};

/// A file's JSON object, or nullopt with the reason printed.
std::optional<json> read_object(const std::filesystem::path& file, const char* what) {
  auto text = read_graph_file(file);
  if (!text)
    return std::nullopt;
  auto j = json::parse(*text, nullptr, false);
  if (!j.is_object()) {
    std::fprintf(stderr, "cdui: %s is not a JSON object (%s)\n", file.c_str(), what);
    return std::nullopt;
  }
  return j;
}

/// What differs between following a sweep and a study.
struct search_kind {
  const char* noun;       // "sweep"
  const char* path;       // "/api/sweeps"
  const char* id_field;   // "sweep_id"
  const char* body_shape; // what the spec file holds
  std::string (*table)(const json&);
  /// The line printed once it was queued.
  std::string (*queued)(const json& submitted);
};

const search_kind sweep_kind{"sweep", "/api/sweeps", "sweep_id", "a sweep: {spec, objective, options?, name?}",
                             sweep_table, [](const json& s) {
                               return std::to_string(s.value("runs", std::size_t{0})) + " runs queued";
                             }};

const search_kind study_kind{
  "study", "/api/studies", "study_id",
  "a study: {space, objective, budget, sampler?, pruner?, seed?, options?, name?}", study_table,
  [](const json& s) {
    auto budget = s["spec"].value("budget", json::object());
    return "up to " + std::to_string(budget.value("trials", 0)) + " trials, "
           + std::to_string(budget.value("max_parallel", 1)) + " at a time, queued";
  }};

/// The state line and the table of a sweep or a study.
std::string report(const search_kind& kind, const json& search) {
  std::string counts;
  for (const auto& [status, n] : search["counts"].items())
    if (n.get<std::size_t>() > 0)
      counts += (counts.empty() ? "" : ", ") + std::to_string(n.get<std::size_t>()) + " " + status;
  return std::string{kind.noun} + " " + search.value(kind.id_field, std::string{}) + " ("
         + search.value("name", std::string{}) + "): " + search.value("state", std::string{}) + ", " + counts + "\n"
         + kind.table(search);
}

/// Follows the sweep or study until it ends; the exit code.
int follow(const search_kind& kind, const server_connection& server, const std::string& id) {
  auto client = http_client(server);
  std::string shown;
  for (;;) {
    auto res = client.Get(std::string{kind.path} + "/" + id);
    if (!res) {
      std::fprintf(stderr, "cdui: %s\n", no_answer(server, res).c_str());
      return exit_run_failed;
    }
    if (res->status != 200) {
      std::fprintf(stderr, "cdui: %s\n", detail_of(*res).c_str());
      return exit_run_failed;
    }
    auto search = json::parse(res->body);
    auto text = report(kind, search);
    if (text != shown) {
      std::printf("%s\n", text.c_str());
      std::fflush(stdout);
      shown = text;
    }
    auto state = search.value("state", std::string{});
    if (state == "finished")
      return exit_ok;
    if (state == "failed" || state == "cancelled")
      return exit_run_failed;
    if (interrupted()) {
      std::printf("stopped following; %s %s goes on (POST %s/%s/cancel stops it)\n", kind.noun, id.c_str(),
                  kind.path, id.c_str());
      return exit_run_failed;
    }
    std::this_thread::sleep_for(poll_interval);
  }
}

int search_command(const search_kind& kind, const sweep_command_options& options) {
  auto home = storage::default_home();
  auto server = find_server(home);
  if (!server) {
    std::fprintf(stderr, "cdui: no cdui server is running on %s; a %s runs on a server (cdui start)\n",
                 home.c_str(), kind.noun);
    return exit_run_failed;
  }
  auto graph = read_object(options.graph_file, "the graph");
  auto body = read_object(options.spec_file, kind.body_shape);
  if (!graph || !body)
    return exit_usage;
  (*body)["graph"] = *graph;
  if (!options.name.empty())
    (*body)["name"] = options.name;
  else if (!body->contains("name"))
    (*body)["name"] = options.graph_file.stem().string();
  auto client = http_client(*server);
  auto res = client.Post(kind.path, json_text(*body), "application/json");
  if (!res) {
    std::fprintf(stderr, "cdui: %s\n", no_answer(*server, res).c_str());
    return exit_run_failed;
  }
  if (res->status != 200) {
    std::fprintf(stderr, "cdui: the server refused the %s: %s\n", kind.noun, detail_of(*res).c_str());
    return res->status == 400 || res->status == 422 ? exit_usage : exit_run_failed;
  }
  auto submitted = json::parse(res->body);
  auto id = submitted.value(kind.id_field, std::string{});
  std::printf("%s %s (%s): %s on the server at %s\n", kind.noun, id.c_str(),
              submitted.value("name", std::string{}).c_str(), kind.queued(submitted).c_str(),
              server->address.http_url().c_str());
  std::fflush(stdout);
  if (options.detach)
    return exit_ok;
  catch_interrupts();
  return follow(kind, *server, id);
}

} // namespace

int sweep_command(const sweep_command_options& options) {
  return search_command(sweep_kind, options);
}

int study_command(const sweep_command_options& options) {
  return search_command(study_kind, options);
}

} // namespace cdui::apps
