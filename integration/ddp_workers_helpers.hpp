#pragma once
// What the tests of DDP across workers share (docs/ddp.md, "Across workers"): two agents on
// loopback, w1 and w2, with two sim cards each and a server that follows them, and a seeded moons
// run with a ddp loop over their cards.

#include <csignal>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

#include "integration/worker_helpers.hpp"
#include "testkit/wait.hpp"

namespace cdui::test {

inline const std::vector<std::string> four_cards{"w1/sim:0", "w1/sim:1", "w2/sim:0", "w2/sim:1"};

/// A seeded moons run of `epochs` (batches of 32 per rank) with its loop's strategy ddp, on
/// `devices`: a set across workers, or with `worker` one worker's cards. Its model is saved to
/// checkpoints/model.pt in its folder (rank 0's).
inline json moons_ddp(int epochs, const std::vector<std::string>& devices, const std::string& worker = "") {
  auto body = moons_on(worker, devices, epochs);
  body["graph"]["nodes"][5]["params"]["strategy"] = "ddp";
  body["graph"]["nodes"].push_back({{"id", "save"}, {"type", "ModelSaver"}, {"params", {{"path", "model.pt"}}}});
  body["graph"]["edges"].push_back({{"from", "loop.model"}, {"to", "save.model"}});
  if (worker.empty())
    body["options"]["target"].erase("worker");
  return body;
}

/// The agents kill a run they were asked to stop 2 s later (10 s by default).
inline const std::map<std::string, std::string> agent_env{{"CODEFYUI_STOP_DEADLINE_S", "2"}};

/// A server and two agents, w1 and w2, with two sim cards each; the server gives a lost worker's
/// runs up after `grace_s`.
template <int grace_s>
struct workers_with_grace {
  temp_home home;
  run_process_guard guard{home};
  server_process srv{home, {{"CODEFYUI_WORKER_HEARTBEAT_S", "0.5"},
                            {"CODEFYUI_WORKER_RESUME_GRACE_S", std::to_string(grace_s)}}};
  std::unique_ptr<process> w1 = start_agent(home, "w1", "2x1GiB", agent_env);
  std::unique_ptr<process> w2 = start_agent(home, "w2", "2x1GiB", agent_env);
  workers_with_grace() {
    await_worker(srv, "w1", "online");
    await_worker(srv, "w2", "online");
  }
};
using two_workers = workers_with_grace<1>;

/// The pid of rank 0 of run `id`, which w1 executes.
inline pid_t rank_0_of(const temp_home& home, const std::string& id) {
  return static_cast<pid_t>(std::stoi(file_text(home.path() / "agents" / "w1" / "runs" / id / "exec.pid")));
}

/// Submits a 4-rank run of 2 epochs over `four_cards` and pauses its rank 0 as soon as its process
/// exists, before its store is up (SIGCONT goes on). Returns the run's id.
inline std::string submit_with_rank_0_paused(const server_process& srv, const temp_home& home) {
  auto id = srv.submit_ok(moons_ddp(2, four_cards));
  auto folder = home.path() / "agents" / "w1" / "runs" / id;
  if (!eventually([&] { return std::filesystem::exists(folder / "exec.pid"); }))
    throw std::runtime_error("rank 0 of run " + id + " never started");
  ::kill(rank_0_of(home, id), SIGSTOP);
  if (file_text(folder / "events.jsonl").find("ddp_rendezvous") != std::string::npos)
    throw std::runtime_error("rank 0's store was up before it was paused");
  return id;
}

/// Two agents, w1 and w2, for servers that a test starts and stops.
struct two_agents {
  temp_home home;
  run_process_guard guard{home};
  std::map<std::string, std::string> env{{"CODEFYUI_WORKER_HEARTBEAT_S", "0.5"}};
  std::unique_ptr<process> w1 = start_agent(home, "w1", "2x1GiB", agent_env);
  std::unique_ptr<process> w2 = start_agent(home, "w2", "2x1GiB", agent_env);
};

} // namespace cdui::test
