#include "apps/run_command.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "actors/server/server.hpp"
#include "apps/client_commands.hpp"
#include "apps/devices_table.hpp"
#include "apps/abandoned_runs.hpp"
#include "apps/interrupt.hpp"
#include "apps/param_overrides.hpp"
#include "apps/progress_printer.hpp"
#include "apps/run_report.hpp"
#include "devices/host_inventory.hpp"
#include "devices/memory.hpp"
#include "devices/sim_devices.hpp"
#include "messages/json_text.hpp"
#include "runtime/validate.hpp"
#include "storage/home.hpp"
#include "storage/server_files.hpp"

namespace cdui::apps {

namespace {

/// How often the event loop wakes up to look at Ctrl+C when no event arrives.
constexpr std::chrono::milliseconds poll_interval{200};

} // namespace

namespace {

run_request make_request(const run_command_options& options, std::string graph_text) {
  run_request request;
  request.graph_json = std::move(graph_text);
  request.name = options.name.empty() ? options.graph_file.stem().string() : options.name;
  request.device = options.device;
  request.has_seed = options.seed.has_value();
  request.seed = options.seed.value_or(0);
  request.deterministic = options.deterministic;
  request.record_outputs = options.record_outputs;
  request.worker = options.target == "local" ? "" : options.target;
  request.devices = options.devices;
  if (options.memory_gib)
    request.memory_bytes = static_cast<std::int64_t>(*options.memory_gib * bytes_per_gib);
  if (!options.resume.empty()) {
    // The server may run in another folder: the path as this shell means it.
    std::error_code ec;
    auto absolute = std::filesystem::absolute(options.resume, ec);
    request.resume_from = (ec ? std::filesystem::path{options.resume} : absolute).lexically_normal().string();
  }
  return request;
}

/// The graph file with the --set overrides applied, validated; nullopt after saying why not.
std::optional<loaded_graph> load_run_graph(const run_command_options& options) {
  auto text = read_graph_file(options.graph_file);
  if (!text)
    return std::nullopt;
  if (options.overrides.empty())
    return check_graph(options.graph_file, std::move(*text));
  std::vector<param_override> overrides;
  for (const auto& o : options.overrides) {
    auto parsed = parse_override(o);
    if (auto* err = std::get_if<std::string>(&parsed)) {
      std::fprintf(stderr, "cdui: %s\n", err->c_str());
      return std::nullopt;
    }
    overrides.push_back(std::get<param_override>(std::move(parsed)));
  }
  auto graph = parse_json_text(*text).value;
  if (graph.is_discarded())  // validation says where the JSON breaks
    return check_graph(options.graph_file, std::move(*text));
  if (auto why = apply_overrides(graph, overrides); !why.empty()) {
    std::fprintf(stderr, "cdui: %s\n", why.c_str());
    return std::nullopt;
  }
  return check_graph(options.graph_file, json_text(graph));
}

/// The run on a runtime inside this process: it lives as long as the process, so Ctrl+C and
/// --timeout cancel it.
int embedded_run(run_request request, const run_command_options& options) {
  ::umask(077);  // the home's store, run folders and checkpoints are this user's alone
  auto home = storage::default_home();
  // Held shared while this process executes runs of the home, so no server starts on it meanwhile.
  auto lock = storage::home_lock::try_lock(home, storage::home_lock::mode::shared);
  if (!lock) {
    std::fprintf(stderr, "cdui: a cdui server is starting on %s; run the command again\n",
                 home.c_str());
    return exit_run_failed;
  }
  catch_interrupts();
  std::unique_ptr<server> owned;
  try {
    server::config embedded;
    embedded.idle_workers_wait = true;
    owned = std::make_unique<server>(embedded);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cdui: %s\n", e.what());
    return exit_usage;
  }
  auto& srv = *owned;
  auto submitted = srv.submit(std::move(request));
  if (!submitted.ok()) {
    std::fprintf(stderr, "cdui: %s\n", submitted.error.c_str());
    return exit_usage;
  }
  const auto& id = submitted.run_id;
  auto queued = srv.info(id);
  std::printf("run %s (%s) queued on %s, folder %s\n", id.c_str(),
              queued ? queued->name.c_str() : "?", queued ? queued->queue_key.c_str() : "?",
              (srv.home() / "runs" / id).c_str());
  std::fflush(stdout);

  auto started = std::chrono::steady_clock::now();
  progress_printer printer{stdout, ::isatty(STDOUT_FILENO) == 1};
  const char* cancelled_by = nullptr;
  std::uint64_t cursor = 0;
  for (;;) {
    bool late = options.timeout_s && std::chrono::duration<double>(
                                       std::chrono::steady_clock::now() - started)
                                         .count() >= *options.timeout_s;
    if (!cancelled_by && (interrupted() || late)) {
      cancelled_by = interrupted() ? "interrupted" : "timeout";
      printer.close_line();
      std::printf("%s: cancelling run %s\n", cancelled_by, id.c_str());
      std::fflush(stdout);
      srv.cancel(id);
    }
    auto batch = srv.events(id, cursor, poll_interval).value();
    for (const auto& e : batch.events) {
      printer.print(e);
      cursor = e.cursor;
    }
    if (batch.finished)
      break;
  }
  printer.close_line();
  auto final_state = srv.wait(id);
  print_run_end(final_state);
  owned.reset();
  if (cancelled_by)
    return exit_code_unless_runs_abandoned(interrupted() ? exit_interrupted : exit_run_failed);
  return final_state.status == run_status::succeeded ? exit_ok : exit_run_failed;
}

} // namespace

std::optional<std::int64_t> memory_option(const std::string& text) {
  auto bytes = devices::parse_bytes(text);
  if (auto* err = std::get_if<std::string>(&bytes)) {
    std::fprintf(stderr, "cdui: --memory: %s\n", err->c_str());
    return std::nullopt;
  }
  return std::get<std::int64_t>(bytes);
}

int run_command(const run_command_options& options) {
  std::int64_t memory_bytes = 0;
  if (!options.memory.empty()) {
    auto bytes = memory_option(options.memory);
    if (!bytes)
      return exit_usage;
    memory_bytes = *bytes;
    if (static_cast<double>(memory_bytes) > max_memory_gib * bytes_per_gib) {
      std::fprintf(stderr, "cdui: --memory: %s is past the largest budget, 1 PiB\n",
                   options.memory.c_str());
      return exit_usage;
    }
  }
  auto loaded = load_run_graph(options);
  if (!loaded)
    return exit_usage;
  auto request = make_request(options, std::move(loaded->text));
  if (memory_bytes > 0)
    request.memory_bytes = memory_bytes;
  auto home = storage::default_home();
  if (auto server = find_server(home))
    return remote_run(*server, request, options);
  if (options.detach || !request.worker.empty()) {
    std::fprintf(stderr, "cdui: %s needs a running server (`cdui start`); no server is running on "
                         "%s\n", options.detach ? "--detach" : "--target", home.c_str());
    return exit_usage;
  }
  std::printf("no cdui server is running on %s: training on the embedded runtime\n", home.c_str());
  return embedded_run(std::move(request), options);
}

int devices_command() {
  try {
    auto inventory = devices::host_inventory::probe();
    std::fputs(devices_table(inventory.devices(), devices::cpu_bf16_support()).c_str(), stdout);
    if (!inventory.cuda_note().empty())
      std::printf("note: %s\n", inventory.cuda_note().c_str());
    return exit_ok;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "cdui: %s\n", e.what());
    return exit_usage;
  }
}

} // namespace cdui::apps
