#include "actors/agent/ddp_ranks.hpp"

#include <csignal>
#include <fstream>

#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "actors/agent/run_supervisor.hpp"
#include "actors/common/run_process.hpp"
#include "storage/home.hpp"

namespace cdui::actors {

namespace {

std::string pid_file(int k) {
  return "exec-rank" + std::to_string(k) + ".pid";
}

} // namespace

int ddp_ranks::world_size(const std::string& graph_json, std::size_t cards) {
  if (cards < 2)
    return 1;
  auto graph = nlohmann::json::parse(graph_json, nullptr, false);
  if (!graph.is_object() || !graph["nodes"].is_array())
    return 1;
  for (const auto& node : graph["nodes"])
    if (node.is_object() && node.value("type", nlohmann::json{}) == "TrainingLoop" && node["params"].is_object()
        && node["params"].value("strategy", nlohmann::json{}) == "ddp")
      return static_cast<int>(cards);
  return 1;
}

std::optional<std::string> ddp_ranks::start(const std::filesystem::path& binary, const std::filesystem::path& dir,
                                            int world, const std::map<std::string, std::string>& env) {
  dir_ = dir;
  world_ = world;
  for (int k = 1; k < world; ++k) {
    pid_t pid = start_exec(binary, dir, false, -1, env,
                           {"--rank", std::to_string(k), "--world-size", std::to_string(world)});
    if (pid < 0) {
      signal(SIGKILL);
      return "cannot start DDP rank " + std::to_string(k) + " of " + std::to_string(world) + " (fork failed)";
    }
    storage::write_file_atomic(dir / pid_file(k), std::to_string(pid) + "\n");
    ranks_.push_back({k, pid, true, false});
  }
  return std::nullopt;
}

void ddp_ranks::recover(const std::filesystem::path& dir) {
  dir_ = dir;
  for (int k = 1;; ++k) {
    std::ifstream in{dir / pid_file(k)};
    pid_t pid = -1;
    if (!(in >> pid))
      break;
    ranks_.push_back({k, pid, false, !run_process_alive(pid, dir)});
    world_ = k + 1;
  }
}

std::optional<std::string> ddp_ranks::look() {
  std::optional<std::string> failure;
  for (auto& r : ranks_) {
    if (r.exited)
      continue;
    int status = 0;
    r.exited = r.child ? ::waitpid(r.pid, &status, WNOHANG) == r.pid : !run_process_alive(r.pid, dir_);
    if (!r.exited)
      continue;
    auto file = "outcome-rank" + std::to_string(r.k) + ".json";
    auto outcome = read_outcome(dir_, file);
    std::string why;
    if (!outcome)
      why = r.child ? process_exit_reason(status) : "its process ended without an outcome";
    else if (outcome->status == run_status::failed)
      why = outcome->error;
    if (!why.empty() && !failure)
      failure = "DDP rank " + std::to_string(r.k) + " of " + std::to_string(world_) + " failed: " + why;
  }
  return failure;
}

bool ddp_ranks::all_exited() const {
  for (const auto& r : ranks_)
    if (!r.exited)
      return false;
  return true;
}

void ddp_ranks::signal(int sig) {
  for (const auto& r : ranks_)
    if (!r.exited && r.pid > 0)
      ::kill(r.pid, sig);
}

} // namespace cdui::actors
