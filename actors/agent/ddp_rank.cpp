#include "actors/agent/ddp_rank.hpp"

#include <chrono>
#include <csignal>
#include <fstream>

#include <sys/wait.h>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/agent/protocol.hpp"
#include "actors/agent/run_supervisor.hpp"
#include "actors/common/guarded.hpp"
#include "actors/common/run_process.hpp"
#include "messages/atoms.hpp"
#include "storage/home.hpp"

namespace cdui::actors {

namespace {

using self_ptr = ddp_rank_actor::stateful_pointer<ddp_rank_state>;

/// How often a rank looks at its process.
constexpr auto rank_tick = std::chrono::milliseconds(20);

std::string of(const ddp_rank_setup& s) {
  return std::to_string(s.k) + " of " + std::to_string(s.world);
}

/// Tells the supervisor the rank has ended, and quits.
void report(self_ptr self, const std::optional<std::string>& failure) {
  self->send(self->state.setup.supervisor, agent_atoms::rank_ended::value, self->state.setup.k,
             failure.value_or(""));
  self->quit();
}

/// Whether its process has exited; its exit reason then (a child is reaped here).
std::optional<std::string> exited(ddp_rank_state& st) {
  if (!st.child)
    return run_process_alive(st.pid, st.setup.dir) ? std::nullopt
                                                   : std::optional<std::string>{"its process ended without an outcome"};
  int status = 0;
  auto reaped = ::waitpid(st.pid, &status, WNOHANG);
  if (reaped == 0)
    return std::nullopt;
  // -1: reaped elsewhere already (the agent stopping a run whose supervisor failed).
  return reaped == st.pid ? process_exit_reason(status) : "its process ended without an outcome";
}

} // namespace

std::string ddp_rank_pid_file(int k) {
  return "exec-rank" + std::to_string(k) + ".pid";
}

int ddp_world_size(const std::string& graph_json, std::size_t cards) {
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

std::optional<std::string> ddp_rank_failure(int k, int world, const std::optional<run_outcome>& outcome,
                                            const std::string& exit_reason, const std::string& worker) {
  std::string why;
  if (!outcome)
    why = exit_reason;
  else if (outcome->status == run_status::failed)
    why = outcome->error;
  if (why.empty())
    return std::nullopt;
  return "DDP rank " + std::to_string(k) + " of " + std::to_string(world)
         + (worker.empty() ? "" : " (on worker '" + worker + "')") + " failed: " + why;
}

ddp_rank_actor::behavior_type ddp_rank(self_ptr self, ddp_rank_setup setup) {
  auto& st = self->state;
  st.setup = std::move(setup);
  const auto& s = st.setup;
  if (s.binary) {
    st.pid = start_exec(*s.binary, s.dir, false, -1, s.env,
                        {"--rank", std::to_string(s.k), "--world-size", std::to_string(s.world)});
    if (st.pid < 0) {
      report(self, "DDP rank " + of(s) + " failed: its process could not start (fork failed)");
      return quit_behavior<ddp_rank_actor>();
    }
    // An agent that restarts finds the rank again by it.
    storage::write_file_atomic(s.dir / ddp_rank_pid_file(s.k), std::to_string(st.pid) + "\n");
  } else {
    st.child = false;
    st.pid = run_process_pid(s.dir, ddp_rank_pid_file(s.k));
  }
  // Linked to its supervisor: it goes with it, and takes the rank's process along when the
  // supervisor died of an error.
  self->set_exit_handler([=](const caf::exit_msg& exit) {
    auto& st = self->state;
    if (exit.reason)
      stop_run_process(st.pid, st.setup.dir);
    self->quit(exit.reason);
  });
  self->send(self, atoms::tick::value);
  return {
    [=](atoms::tick) {
      auto& st = self->state;
      if (auto reason = exited(st)) {
        auto file = "outcome-rank" + std::to_string(st.setup.k) + ".json";
        report(self, ddp_rank_failure(st.setup.k, st.setup.world, read_outcome(st.setup.dir, file), *reason,
                                      st.setup.worker));
        return;
      }
      self->delayed_send(self, rank_tick, atoms::tick::value);
    },
    [=](agent_atoms::signal, int sig) {
      if (self->state.pid > 0)
        ::kill(self->state.pid, sig);
    },
  };
}

} // namespace cdui::actors
