#include "apps/exec_command.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "actors/policy/run_options.hpp"
#include "apps/agent_watch.hpp"
#include "apps/ddp_settings.hpp"
#include "apps/run_command.hpp"
#include "devices/host_inventory.hpp"
#include "messages/clock.hpp"
#include "messages/json_text.hpp"
#include "runtime/engine.hpp"
#include "runtime/stored_values.hpp"
#include "storage/home.hpp"
#include "storage/run_directory.hpp"

namespace cdui::apps {

namespace {

std::atomic<bool> stop_flag{false};
std::atomic<bool> interrupt_flag{false};

extern "C" void on_term(int) {
  stop_flag = true;
}

extern "C" void on_usr1(int) {
  interrupt_flag = true;
  stop_flag = true;
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in{file, std::ios::binary};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_outcome(const std::filesystem::path& file, const run_outcome& o) {
  nlohmann::json j{{"status", to_string(o.status)}, {"error", o.error},
                   {"final_metrics", nlohmann::json::parse(o.final_metrics, nullptr, false)}};
  storage::write_file_atomic(file, json_text(j) + "\n");
}

} // namespace

int exec_command(const std::filesystem::path& run_dir, bool pipe, int rank, int world_size) {
  std::signal(SIGTERM, on_term);
  std::signal(SIGUSR1, on_usr1);
  // A worker's DDP rank that writes to a rank that died gets "Broken pipe" (an error it reports,
  // and that says it lost the other ranks), not a death by SIGPIPE. Under a server (--pipe) a
  // write to a pipe the server no longer reads ends the process, as SIGPIPE does by default.
  if (!pipe)
    std::signal(SIGPIPE, SIG_IGN);
  // The agent starts this process with both blocked, so that one sent early waits for the handler.
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGUSR1);
  ::pthread_sigmask(SIG_UNBLOCK, &stops, nullptr);
  auto run = nlohmann::json::parse(read_text(run_dir / "run.json"), nullptr, false);
  if (!run.is_object()) {
    std::fprintf(stderr, "cdui exec: %s has no readable run.json\n", run_dir.c_str());
    return exit_usage;
  }
  if (rank >= world_size) {
    std::fprintf(stderr, "cdui exec: --rank %d is not below --world-size %d\n", rank, world_size);
    return exit_usage;
  }
  auto graph_text = read_text(run_dir / "graph.json");
  auto id = run.value("run_id", run_dir.filename().string());
  // Only rank 0's events reach the run's events; another rank keeps its own log beside them.
  std::FILE* lines = stdout;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> rank_log{nullptr, &std::fclose};
  if (rank > 0) {
    rank_log.reset(std::fopen((run_dir / ("output-rank" + std::to_string(rank) + ".log")).c_str(), "a"));
    lines = rank_log.get();
  }
  std::optional<storage::run_directory> dir;
  if (!pipe && rank == 0)
    dir.emplace(run_dir.parent_path().parent_path(), id, graph_text);
  std::uint64_t cursor = 0;
  auto emit = [&](const std::string& type, const nlohmann::json& data) {
    if (dir) {
      dir->append({++cursor, now_ms(), type, json_text(data)});
      return;
    }
    if (lines == nullptr)
      return;
    // One line an event; a run that crashes leaves its last whole lines behind.
    auto line = json_text({{"type", type}, {"time_ms", now_ms()}, {"data", data}}) + "\n";
    std::fwrite(line.data(), 1, line.size(), lines);
    std::fflush(lines);
  };
  auto outcome_file = run_dir / (rank == 0 ? std::string{"outcome.json"}
                                           : "outcome-rank" + std::to_string(rank) + ".json");
  auto checked = runtime::validate_graph(graph_text);
  if (auto* errors = std::get_if<std::vector<runtime::graph_error>>(&checked)) {
    // The server validated it; a worker whose node types differ may not accept it.
    run_outcome o{run_status::failed, "the worker cannot run this graph: " + runtime::to_string(*errors), "{}"};
    emit("execution_error", {{"kind", "error"}, {"error", o.error}});
    write_outcome(outcome_file, o);
    return exit_ok;
  }
  // On a worker the agent set CODEFYUI_SIM_DEVICES to the run's cards; under a server, the
  // server's cards, by the server's names.
  // The run needs its cards' count and the cores, not what the driver says of each card.
  auto host = devices::host_inventory::probe(devices::cuda_detail::counted);
  if (!pipe)  // What the run sees: its cards renumbered from 0, and which worker's cards they are.
    emit("execution_facts", {{"worker", run.value("worker", std::string{})},
                             {"visible_devices", run["visible_devices"]},
                             {"device_aliases", run["device_aliases"]}});
  runtime::run_context ctx;
  ctx.run_id = id;
  ctx.run_dir = run_dir;
  ctx.device = run.value("device", std::string{"cpu"});
  ctx.slot = run.value("slot", ctx.device);
  // A worker's run: which of the worker's cards its own names are (a server's run has none).
  if (auto aliases = run.find("device_aliases"); aliases != run.end() && aliases->is_object())
    for (const auto& [in_run, worker_card] : aliases->items())
      if (worker_card.is_string())
        ctx.device_aliases[in_run] = worker_card.get<std::string>();
  ctx.seed = run.value("seed", std::uint64_t{0});
  ctx.num_threads = run.value("num_threads", host.cores_per_run(ctx.device));
  ctx.host = host.counts();
  auto options = run.value("options", nlohmann::json::object());
  ctx.deterministic = options.value("deterministic", false);
  // Recorded outputs stay on the worker, in the run's folder; the agent serves them to the server.
  ctx.record_outputs = options.value("record_outputs", false);
  if (ctx.record_outputs)
    ctx.stores = runtime::outputs_file(run_dir / "outputs.json");
  // Its memory budget, as the server wrote it in the options (a run held to it outgrows it
  // alone), and the checkpoint it continues from.
  run_request asked;
  if (policy::apply_options(options, asked).empty()) {
    if (asked.memory_bytes > 0) {
      ctx.memory_budget = asked.memory_bytes;
      if (!asked.memory_source.empty())
        ctx.memory_budget_source = asked.memory_source;
    }
    ctx.resume_from = asked.resume_from;
  }
  ctx.stop = std::shared_ptr<const std::atomic<bool>>(&stop_flag, [](const std::atomic<bool>*) {});
  ctx.interrupt =
    std::shared_ptr<const std::atomic<bool>>(&interrupt_flag, [](const std::atomic<bool>*) {});
  ctx.emit = emit;
  auto graph = std::get<runtime::validated_graph>(checked);
  if (world_size > 1) {
    if (auto error = ddp_settings(run, run_dir, rank, world_size,
                                  {std::getenv("CDUI_DDP_SECRET"), std::getenv("CODEFYUI_DDP_TIMEOUT_S")}, ctx.ddp)) {
      std::fprintf(stderr, "cdui exec: %s\n", error->c_str());
      return exit_usage;
    }
    ::unsetenv("CDUI_DDP_SECRET");  // the rank holds it; what the run starts does not inherit it
    if (auto conflict = runtime::ddp_conflict(graph)) {
      run_outcome o{run_status::failed, *conflict, "{}"};
      emit("execution_error", {{"kind", "error"}, {"error", o.error}});
      write_outcome(outcome_file, o);
      return exit_ok;
    }
    if (rank > 0) {
      ctx.device = ctx.ddp.device;
      ctx.slot = ctx.device;
      graph = runtime::ddp_rank_part(graph);
    }
  }
  // A worker run, whose agent started this process: without an agent for the resume grace (killed,
  // and none came back for it), the run stops, interrupted. Rank 0 watches: a ddp run's other ranks
  // stop with it at the same batch, as at a cancel (a rank that stopped alone would end the others'
  // loops without their stop, and rank 0's outcome, the run's, would say succeeded).
  std::optional<agent_watch> watch;
  if (!run.value("worker", std::string{}).empty() && rank == 0)
    watch.emplace(run_dir.parent_path().parent_path(), agent_watch::grace_from_env(), [](const std::string& why) {
      std::fprintf(stderr, "cdui exec: %s: the run stops, interrupted\n", why.c_str());
      interrupt_flag = true;
      stop_flag = true;
    });
  auto outcome = runtime::execute(graph, ctx);
  watch.reset();
  write_outcome(outcome_file, outcome);
  return exit_ok;
}

} // namespace cdui::apps
