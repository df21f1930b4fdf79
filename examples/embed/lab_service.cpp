// A lab service that embeds the cdui runtime (docs/embedding.md): it starts a server in its own
// process, serves cdui's HTTP API from it, submits a training graph, follows its events, cancels
// a second run, reads the metrics, asks its own HTTP API about the run, and shuts down.
//
//   lab_service GRAPH.json HOME
//
// Exits 0 when the run succeeded, the second run ended cancelled and the API answered.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "actors/server/server.hpp"
#include "apps/http_api.hpp"
#include "messages/version.hpp"

namespace {

std::string read_file(const char* path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

/// Follows a run's events to its end: prints its start, warnings and end, and counts the others
/// (node status, progress, metrics).
void follow(cdui::server& runtime, const std::string& run_id) {
  std::uint64_t cursor = 0;
  std::map<std::string, int> counted;
  for (;;) {
    // A long poll: returns with the next events, or after a second with none.
    auto batch = runtime.events(run_id, cursor, std::chrono::seconds{1}).value();
    for (const auto& e : batch.events) {
      cursor = e.cursor;
      if (e.type.rfind("execution_", 0) == 0 || e.type == "run_warning")
        std::printf("event %llu %s\n", static_cast<unsigned long long>(e.cursor), e.type.c_str());
      else
        ++counted[e.type];
    }
    if (batch.finished)
      break;
  }
  for (const auto& [type, count] : counted)
    std::printf("%d %s events\n", count, type.c_str());
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: lab_service GRAPH.json HOME\n");
    return 2;
  }
  auto graph = read_file(argv[1]);
  if (graph.empty()) {
    std::fprintf(stderr, "lab_service: cannot read a graph from %s\n", argv[1]);
    return 2;
  }

  // The runtime: its run store and run folders in HOME; runs execute on threads of this process.
  cdui::server::config config;
  config.home = argv[2];
  cdui::server runtime{config};

  // cdui's HTTP API, served by this process on a port of its own.
  httplib::Server http;
  cdui::apps::mount_http_api(http, runtime, {/*token=*/"lab-service-token"});
  int port = http.bind_to_any_port("127.0.0.1");
  if (port < 0) {
    std::fprintf(stderr, "lab_service: cannot listen on 127.0.0.1\n");
    return 1;
  }
  std::thread listener{[&http] { http.listen_after_bind(); }};
  std::printf("lab service: cdui %s on %s, HTTP API on http://127.0.0.1:%d\n", cdui::version(),
              runtime.home().c_str(), port);

  cdui::run_request request;
  request.graph_json = graph;
  request.name = "lab-moons";
  request.has_seed = true;
  request.seed = 7;
  auto submitted = runtime.submit(request);
  if (!submitted.ok()) {
    std::fprintf(stderr, "lab_service: the run was refused: %s\n", submitted.error.c_str());
    return 1;
  }
  std::printf("submitted %s (lab-moons)\n", submitted.run_id.c_str());

  // A second run, cancelled at once: it leaves its queue, or stops between batches.
  request.name = "to-cancel";
  auto second = runtime.submit(request);
  bool cancel_asked = second.ok() && runtime.cancel(second.run_id);
  auto cancelled = runtime.wait(second.run_id);
  std::printf("run %s (to-cancel): cancel %s, %s\n", second.run_id.c_str(),
              cancel_asked ? "asked" : "refused", std::string{to_string(cancelled.status)}.c_str());

  follow(runtime, submitted.run_id);
  auto info = runtime.wait(submitted.run_id);
  std::printf("run %s %s: final metrics %s\n", info.id.c_str(),
              std::string{to_string(info.status)}.c_str(), info.final_metrics.c_str());
  if (!info.error.empty())
    std::printf("error: %s\n", info.error.c_str());

  auto accuracy = runtime.metrics(submitted.run_id, "val_accuracy");
  if (accuracy && !accuracy->empty())
    std::printf("val_accuracy: %zu points, last %.4f\n", accuracy->size(), accuracy->back().value);

  // What a client of the service sees: the same run through the HTTP API.
  httplib::Client client{"127.0.0.1", port};
  auto answer = client.Get("/api/runs/" + submitted.run_id);
  std::string api_status = "no answer";
  if (answer && answer->status == 200)
    api_status = nlohmann::json::parse(answer->body).value("status", "");
  std::printf("GET /api/runs/%s: %d %s\n", submitted.run_id.c_str(), answer ? answer->status : 0,
              api_status.c_str());

  // Stop taking requests, then runs; the destructor stops the actors.
  http.stop();
  listener.join();
  runtime.shutdown();
  std::printf("shut down\n");

  bool ok = info.status == cdui::run_status::succeeded
            && cancelled.status == cdui::run_status::cancelled && api_status == "succeeded";
  return ok ? 0 : 1;
}
