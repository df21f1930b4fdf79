#include "apps/sweep_command.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/client_commands.hpp"
#include "apps/interrupt.hpp"
#include "apps/run_command.hpp"
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

/// The state line and the ranked table of a sweep.
std::string report(const json& sweep) {
  std::string counts;
  for (const auto& [status, n] : sweep["counts"].items())
    if (n.get<std::size_t>() > 0)
      counts += (counts.empty() ? "" : ", ") + std::to_string(n.get<std::size_t>()) + " " + status;
  return "sweep " + sweep.value("sweep_id", std::string{}) + " (" + sweep.value("name", std::string{})
         + "): " + sweep.value("state", std::string{}) + ", " + counts + "\n" + sweep_table(sweep);
}

/// Follows the sweep until it ends; the exit code.
int follow_sweep(const server_connection& server, const std::string& id) {
  auto client = http_client(server);
  std::string shown;
  for (;;) {
    auto res = client.Get("/api/sweeps/" + id);
    if (!res) {
      std::fprintf(stderr, "cdui: %s\n", no_answer(server, res).c_str());
      return exit_run_failed;
    }
    if (res->status != 200) {
      std::fprintf(stderr, "cdui: %s\n", detail_of(*res).c_str());
      return exit_run_failed;
    }
    auto sweep = json::parse(res->body);
    auto text = report(sweep);
    if (text != shown) {
      std::printf("%s\n", text.c_str());
      std::fflush(stdout);
      shown = text;
    }
    auto state = sweep.value("state", std::string{});
    if (state == "finished")
      return exit_ok;
    if (state == "failed" || state == "cancelled")
      return exit_run_failed;
    if (interrupted()) {
      std::printf("stopped following; sweep %s goes on (POST /api/sweeps/%s/cancel stops it)\n",
                  id.c_str(), id.c_str());
      return exit_run_failed;
    }
    std::this_thread::sleep_for(poll_interval);
  }
}

} // namespace

int sweep_command(const sweep_command_options& options) {
  auto home = storage::default_home();
  auto server = find_server(home);
  if (!server) {
    std::fprintf(stderr, "cdui: no cdui server is running on %s; a sweep runs on a server "
                         "(cdui start)\n", home.c_str());
    return exit_run_failed;
  }
  auto graph = read_object(options.graph_file, "the graph");
  auto body = read_object(options.spec_file, "a sweep: {spec, objective, options?, name?}");
  if (!graph || !body)
    return exit_usage;
  (*body)["graph"] = *graph;
  if (!options.name.empty())
    (*body)["name"] = options.name;
  else if (!body->contains("name"))
    (*body)["name"] = options.graph_file.stem().string();
  auto client = http_client(*server);
  auto res = client.Post("/api/sweeps", json_text(*body), "application/json");
  if (!res) {
    std::fprintf(stderr, "cdui: %s\n", no_answer(*server, res).c_str());
    return exit_run_failed;
  }
  if (res->status != 200) {
    std::fprintf(stderr, "cdui: the server refused the sweep: %s\n", detail_of(*res).c_str());
    return res->status == 400 || res->status == 422 ? exit_usage : exit_run_failed;
  }
  auto submitted = json::parse(res->body);
  auto id = submitted.value("sweep_id", std::string{});
  std::printf("sweep %s (%s): %zu runs queued on the server at %s\n", id.c_str(),
              submitted.value("name", std::string{}).c_str(), submitted.value("runs", std::size_t{0}),
              server->address.http_url().c_str());
  std::fflush(stdout);
  if (options.detach)
    return exit_ok;
  catch_interrupts();
  return follow_sweep(*server, id);
}

} // namespace cdui::apps
