#pragma once
// What the worker tests share: agents started as real processes, the server's view of them, and
// a hand-made peer that speaks (or garbles) the wire.

#include <fstream>
#include <memory>
#include <optional>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "integration/server_process.hpp"
#include "messages/wire.hpp"
#include "messages/worker.hpp"
#include "unit/test_graphs.hpp"

namespace cdui::test {

using namespace std::chrono_literals;
using nlohmann::json;


/// Degraded after 1 s without a heartbeat, Disconnected after 1.5 s.
inline const std::map<std::string, std::string> fast_heartbeats{{"CODEFYUI_WORKER_HEARTBEAT_S", "0.5"}};

/// `cdui agent start --foreground` on the server's home, offering two sim cards (or `sim`).
inline std::unique_ptr<cdui::test::process> start_agent(const cdui::test::temp_home& home,
                                                        const std::string& name,
                                                        const std::string& sim = "2x1GiB") {
  return std::make_unique<cdui::test::process>(
    std::vector<std::string>{CDUI_BINARY, "agent", "start", "--foreground", "--name", name},
    std::map<std::string, std::string>{{"CODEFYUI_HOME", home.path().string()},
                                       {"CODEFYUI_SIM_DEVICES", sim}});
}

/// What `cdui workers` prints for the server of `home` (it must exit 0).
inline std::string workers_listing(const cdui::test::temp_home& home) {
  cdui::test::process listing{{CDUI_BINARY, "workers"}, {{"CODEFYUI_HOME", home.path().string()}}};
  if (listing.wait_for(30s).value_or(-1) != 0)
    throw std::runtime_error("cdui workers failed: " + listing.err());
  return listing.out();
}

inline json worker(const server_process& srv, const std::string& name) {
  auto listing = srv.get_json("/api/workers");  // a named object: a range over a temporary's member dangles
  for (const auto& w : listing["workers"])
    if (w["name"] == name)
      return w;
  return nullptr;
}

/// Polls GET /api/workers until the worker has `status`; its entry.
inline json await_worker(const server_process& srv, const std::string& name, const std::string& status,
                  std::chrono::seconds timeout = 30s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto w = worker(srv, name);
    if (!w.is_null() && w["status"] == status)
      return w;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("worker " + name + " never became " + status + ": " + w.dump());
    std::this_thread::sleep_for(50ms);
  }
}

inline json bridge_state(const server_process& srv) {
  auto status = srv.get_json("/api/status");
  for (const auto& child : status["children"])
    if (child["kind"] == "worker_registry")
      for (const auto& c : child["children"])
        if (c["kind"] == "zmq_bridge")
          return c["state"];
  throw std::runtime_error("no zmq_bridge in /api/status");
}

/// A peer of the server's ROUTER made by hand: it sends what it is told, valid or not.
class raw_peer {
public:
  /// With `server_key` (Z85) it is a CURVE client of a server that encrypts its wire.
  explicit raw_peer(const std::string& endpoint, const std::string& server_key = "")
    : socket_{context_, zmq::socket_type::dealer} {
    socket_.set(zmq::sockopt::linger, 0);
    if (!server_key.empty()) {
      char pub[41], sec[41];
      zmq_curve_keypair(pub, sec);
      socket_.set(zmq::sockopt::curve_serverkey, server_key);
      socket_.set(zmq::sockopt::curve_publickey, std::string{pub});
      socket_.set(zmq::sockopt::curve_secretkey, std::string{sec});
    }
    socket_.connect(endpoint);
  }
  void send(const std::vector<std::string>& frames) {
    std::vector<zmq::const_buffer> buffers;
    for (const auto& f : frames)
      buffers.push_back(zmq::buffer(f));
    (void)zmq::send_multipart(socket_, buffers);
  }
  template <class T>
  void send(cdui::wire::message_type type, const T& payload, std::uint16_t version = cdui::wire::protocol_version) {
    send({cdui::wire::encode_envelope({version, type, 0, "test"}), cdui::wire::encode(payload)});
  }
  /// The next message's type and payload, or nullopt after `timeout`.
  std::optional<std::pair<cdui::wire::message_type, std::string>> receive(std::chrono::milliseconds timeout) {
    zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}};
    if (zmq::poll(items, 1, timeout) == 0)
      return std::nullopt;
    std::vector<zmq::message_t> parts;
    (void)zmq::recv_multipart(socket_, std::back_inserter(parts));
    auto e = std::get<cdui::wire::envelope>(cdui::wire::decode_envelope(parts.at(0).to_string_view()));
    return std::make_pair(e.type, parts.at(1).to_string());
  }

private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
};

inline std::string zmq_endpoint(const cdui::test::temp_home& home) {
  std::ifstream in{home.path() / "server.json"};
  return json::parse(in)["zmq"].get<std::string>();
}

inline std::string token_of(const cdui::test::temp_home& home) {
  std::ifstream in{home.path() / "session.token"};
  std::string token;
  std::getline(in, token);
  return token;
}

inline cdui::hello good_hello(const cdui::test::temp_home& home, const std::string& name) {
  cdui::hello h;
  h.name = name;
  h.version = "0.1.0";
  h.credential = token_of(home);
  h.devices = {{"cpu", "cpu", "cpu-test", 1 << 30, 1 << 30}};
  return h;
}

/// The pids of `cdui exec` processes (a worker's, or a server's with --isolation process) whose
/// run folder is under `home`; with `run_id`, of that run only.
inline std::vector<pid_t> run_processes(const cdui::test::temp_home& home,
                                        const std::string& run_id = "") {
  std::vector<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator{"/proc"}) {
    auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream in{entry.path() / "cmdline", std::ios::binary};
    std::string cmdline{std::istreambuf_iterator<char>{in}, {}};
    auto exec = cmdline.find(std::string{"exec"} + '\0');
    auto folder = cmdline.find('\0' + home.path().string());
    if (exec != std::string::npos && folder != std::string::npos && exec < folder
        && (run_id.empty() || cmdline.find("/" + run_id + '\0', folder) != std::string::npos))
      pids.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return pids;
}

/// Whatever a test leaves, no run process of its home outlives it (they have their own sessions).
struct run_process_guard {
  const cdui::test::temp_home& home;
  ~run_process_guard() {
    for (auto pid : run_processes(home))
      ::kill(pid, SIGKILL);
  }
};

inline json moons_on(const std::string& worker, std::vector<std::string> devices, int epochs = 2) {
  auto g = cdui::test::moons_graph_json(epochs, 0, 16, "cpu");
  g["nodes"][5]["params"].erase("device");  // the run's device, not a node's, decides
  return {{"graph", g},
          {"options", {{"seed", 1}, {"target", {{"worker", worker}, {"devices", devices}}}}}};
}


} // namespace cdui::test
