#pragma once
// What the worker tests share beyond testkit/: real agents on the server's home, `cdui workers`,
// and a hello and a run body for a worker.

#include <memory>

#include "testkit/graphs.hpp"
#include "testkit/server_process.hpp"
#include "testkit/wire_peer.hpp"

namespace cdui::test {

using namespace std::chrono_literals;
using nlohmann::json;

/// Degraded after 1 s without a heartbeat, Disconnected after 1.5 s.
inline const std::map<std::string, std::string> fast_heartbeats{{"CODEFYUI_WORKER_HEARTBEAT_S", "0.5"}};

/// `cdui agent start --foreground` on the server's home, offering two sim cards (or `sim`), with
/// `env` added to its environment.
inline std::unique_ptr<process> start_agent(const temp_home& home, const std::string& name,
                                            const std::string& sim = "2x1GiB",
                                            std::map<std::string, std::string> env = {}) {
  env["CODEFYUI_HOME"] = home.path().string();
  env["CODEFYUI_SIM_DEVICES"] = sim;
  return start_cdui({"agent", "start", "--foreground", "--name", name}, env);
}

/// What `cdui workers` prints for the server of `home` (it must exit 0).
inline std::string workers_listing(const temp_home& home) {
  auto listing = run_cdui(home, {"workers"}, 30s);
  if (listing.code != 0)
    throw std::runtime_error("cdui workers failed: " + listing.err);
  return listing.out;
}

/// A hello from `name` with the session token of `home`, offering the cpu.
inline hello good_hello(const temp_home& home, const std::string& name) {
  return make_hello(name, token_of(home), {{"cpu", "cpu", "cpu-test", 1 << 30, 1 << 30}});
}

/// A seeded moons run of `epochs` on `devices` of `worker`; no node names a device.
inline json moons_on(const std::string& worker, std::vector<std::string> devices, int epochs = 2) {
  auto body = body_on_worker(moons_graph_json(epochs, 0, 16, std::nullopt), worker, devices);
  body["options"]["seed"] = 1;
  return body;
}

/// Whether the run has reported a training batch (a ddp loop is past the ranks' first collective).
inline bool training(const server_process& srv, const std::string& id) {
  for (const auto& e : srv.all_events(id))
    if (e["type"] == "progress")
      return true;
  return false;
}

} // namespace cdui::test
