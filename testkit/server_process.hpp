#pragma once
// The real `cdui` binary under test: a server started in the foreground on a home and stopped by
// its own pid, commands run and waited for, and what a server or agent left behind, found by pid.
// CDUI_BINARY is the binary's path (target cdui_testkit_processes defines it).

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "testkit/home.hpp"
#include "testkit/process.hpp"
#include "testkit/wait.hpp"

namespace cdui::test {

/// What a server wrote at start: server.json (its pid, HTTP port and ZeroMQ endpoint) and its
/// session token.
struct server_files {
  pid_t pid = -1;
  int port = 0;
  std::string zmq;
  std::string token;
};

/// The first line of a text file ("" when there is none).
inline std::string first_line(const std::filesystem::path& file) {
  std::ifstream in{file};
  std::string line;
  std::getline(in, line);
  return line;
}

/// The server files of `home`; nullopt while server.json is missing or half written.
inline std::optional<server_files> read_server_files(const std::filesystem::path& home) {
  std::ifstream in{home / "server.json"};
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j["pid"].is_number_integer() || !j["port"].is_number_integer())
    return std::nullopt;
  return server_files{j["pid"].get<pid_t>(), j["port"].get<int>(), j.value("zmq", ""),
                      first_line(home / "session.token")};
}

/// The ZeroMQ endpoint in the server.json of `home`.
inline std::string zmq_endpoint(const temp_home& home) {
  auto files = read_server_files(home.path());
  if (!files)
    throw std::runtime_error("no server.json in " + home.path().string());
  return files->zmq;
}

/// The session token of `home`'s server.
inline std::string token_of(const temp_home& home) {
  return first_line(home.path() / "session.token");
}

/// How a server_process starts.
struct server_launch {
  std::string binary = CDUI_BINARY;
  /// Its stdout and stderr go to this file; none: captured (proc().err()).
  std::optional<std::filesystem::path> log;
  /// One keep-alive HTTP client for every request of this object (a benchmark's), instead of a
  /// connection a request (which any thread may make).
  bool keep_alive = false;
  std::chrono::seconds start_timeout = std::chrono::seconds(60);
  std::chrono::seconds stop_timeout = std::chrono::seconds(60);
};

/// A real `cdui start --foreground --host 127.0.0.1 --port 0` on a given home; ready once its
/// server.json names its pid. The test talks to it over HTTP with the token from its 0600 file.
/// stop() and the destructor stop it by its pid (SIGTERM, then SIGKILL).
class server_process {
public:
  server_process(const temp_home& home, std::map<std::string, std::string> env = {})
    : server_process(home.path(), std::move(env)) {}

  /// `env` over this environment, CODEFYUI_HOME added and CODEFYUI_SIM_DEVICES 1x1GiB unless given.
  server_process(const std::filesystem::path& home, std::map<std::string, std::string> env,
                 server_launch launch = {})
    : home_(home), launch_(std::move(launch)) {
    env["CODEFYUI_HOME"] = home_.string();
    if (!env.count("CODEFYUI_SIM_DEVICES"))
      env["CODEFYUI_SIM_DEVICES"] = "1x1GiB";
    std::error_code ec;
    std::filesystem::remove(home_ / "server.json", ec);
    auto started = std::chrono::steady_clock::now();
    proc_ = std::make_unique<process>(
      std::vector<std::string>{launch_.binary, "start", "--foreground", "--host", "127.0.0.1", "--port", "0"},
      env, launch_.log);
    auto deadline = started + launch_.start_timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto files = read_server_files(home_);
      if (files && files->pid == proc_->pid()) {
        files_ = *files;
        start_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (launch_.keep_alive) {
          kept_ = std::make_unique<httplib::Client>(client());
          kept_->set_keep_alive(true);
        }
        return;
      }
      if (proc_->exited())
        throw std::runtime_error("the server exited at start: " + output());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop();
    throw std::runtime_error("the server did not write server.json in time: " + output());
  }

  ~server_process() { stop(); }

  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  /// Closes the kept client (an idle keep-alive connection holds a stop for seconds), then stops
  /// the server by its pid; the seconds it took to exit.
  double stop() {
    if (kept_)
      kept_->stop();
    return proc_->stop(launch_.stop_timeout);
  }

  /// A new client of this server: 127.0.0.1, TCP_NODELAY, a 120 s read timeout.
  [[nodiscard]] httplib::Client client() const {
    httplib::Client c{"127.0.0.1", files_.port};
    c.set_read_timeout(std::chrono::seconds(120));
    c.set_tcp_nodelay(true);
    return c;
  }
  [[nodiscard]] httplib::Headers auth() const { return {{"X-CodefyUI-Token", files_.token}}; }
  [[nodiscard]] int port() const { return files_.port; }
  [[nodiscard]] pid_t pid() const { return proc_->pid(); }
  [[nodiscard]] const std::string& token() const { return files_.token; }
  [[nodiscard]] const std::string& zmq_endpoint() const { return files_.zmq; }
  [[nodiscard]] const std::filesystem::path& home() const { return home_; }
  [[nodiscard]] double start_seconds() const { return start_seconds_; }
  [[nodiscard]] process& proc() { return *proc_; }

  /// POST /api/runs with the token; the response (status and body).
  httplib::Result submit(const nlohmann::json& body) const {
    return with_client([&](httplib::Client& c) {
      return c.Post("/api/runs", auth(), body.dump(), "application/json");
    });
  }

  /// POST /api/runs that must be accepted; the run's id. Throws with the answer otherwise.
  std::string submit_ok(const nlohmann::json& body) const {
    auto res = submit(body);
    if (!res || res->status != 200)
      throw std::runtime_error("POST /api/runs was refused: "
                               + (res ? std::to_string(res->status) + " " + res->body
                                      : httplib::to_string(res.error())));
    return nlohmann::json::parse(res->body)["run_id"].get<std::string>();
  }

  /// POST /api/runs/{id}/cancel.
  void cancel(const std::string& id) const {
    with_client([&](httplib::Client& c) {
      return c.Post(("/api/runs/" + id + "/cancel").c_str(), auth(), "", "application/json");
    });
  }

  /// GET `path`, parsed; throws when no answer came.
  nlohmann::json get_json(const std::string& path) const {
    auto res = with_client([&](httplib::Client& c) { return c.Get(path.c_str()); });
    if (!res)
      throw std::runtime_error("GET " + path + " got no answer: " + httplib::to_string(res.error()));
    return nlohmann::json::parse(res->body);
  }

  /// Polls GET /api/runs/{id} until it has `status`; throws after `timeout`.
  void await_status(const std::string& id, const std::string& status,
                    std::chrono::seconds timeout = std::chrono::seconds(60)) const {
    if (!eventually([&] { return get_json("/api/runs/" + id)["status"] == status; }, timeout))
      throw std::runtime_error("run " + id + " never reached " + status + ": "
                               + get_json("/api/runs/" + id).dump() + "; the queues: "
                               + get_json("/api/status")["children"][0]["state"].dump());
  }

  /// Polls GET /api/runs/{id} every `poll` until its status is final; the run's JSON.
  nlohmann::json wait_final(const std::string& id, std::chrono::seconds timeout = std::chrono::seconds(240),
                            std::chrono::microseconds poll = std::chrono::milliseconds(50)) const {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto run = get_json("/api/runs/" + id);
      if (run["active"] == false)
        return run;
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("run " + id + " did not end in time: " + run.dump());
      std::this_thread::sleep_for(poll);
    }
  }

  /// Every event of a run, read page by page.
  std::vector<nlohmann::json> all_events(const std::string& id) const {
    std::vector<nlohmann::json> events;
    std::uint64_t cursor = 0;
    for (;;) {
      auto page = get_json("/api/runs/" + id + "/events?cursor=" + std::to_string(cursor));
      for (auto& e : page["events"])
        events.push_back(e);
      cursor = page["cursor"].get<std::uint64_t>();
      if (page["finished"] == true || page["events"].empty())
        return events;
    }
  }

private:
  template <class F>
  httplib::Result with_client(F&& f) const {
    if (kept_)
      return f(*kept_);
    auto c = client();
    return f(c);
  }

  /// What the server printed, or where it did.
  std::string output() {
    return launch_.log ? "see " + launch_.log->string() : proc_->err();
  }

  std::filesystem::path home_;
  server_launch launch_;
  std::unique_ptr<process> proc_;
  server_files files_;
  double start_seconds_ = 0;
  std::unique_ptr<httplib::Client> kept_;
};

/// `cdui ARGS` with `env` over this environment, started (not waited for).
inline std::unique_ptr<process> start_cdui(std::vector<std::string> args,
                                           const std::map<std::string, std::string>& env) {
  args.insert(args.begin(), CDUI_BINARY);
  return std::make_unique<process>(args, env);
}

/// `cdui ARGS` on `home` (CODEFYUI_HOME), started (not waited for).
inline std::unique_ptr<process> start_cdui(const temp_home& home, std::vector<std::string> args) {
  return start_cdui(std::move(args), {{"CODEFYUI_HOME", home.path().string()}});
}

/// How long run_cdui waits: a command that trains takes minutes on a busy machine.
inline constexpr auto command_timeout = std::chrono::minutes(5);

/// One `cdui ARGS` with `env` over this environment, waited for (`timeout` at most, then throws).
inline finished_command run_cdui(std::vector<std::string> args,
                                 const std::map<std::string, std::string>& env,
                                 std::chrono::milliseconds timeout = command_timeout) {
  args.insert(args.begin(), CDUI_BINARY);
  return run_command(args, env, timeout);
}

/// `cdui ARGS` on `home` (CODEFYUI_HOME), waited for.
inline finished_command run_cdui(const temp_home& home, std::vector<std::string> args,
                                 std::chrono::milliseconds timeout = command_timeout) {
  return run_cdui(std::move(args), {{"CODEFYUI_HOME", home.path().string()}}, timeout);
}

/// `graph` written to `home`/NAME.json for a command line; the file's path.
inline std::string write_graph(const temp_home& home, const std::string& name,
                               const nlohmann::json& graph) {
  auto path = home.path() / (name + ".json");
  std::ofstream{path} << graph.dump();
  return path.string();
}

/// The id of the first "run <id> " that `cdui run` (or follow, cancel) printed in `out`; throws
/// when there is none.
inline std::string run_id_in(const std::string& out) {
  for (auto at = out.find("run "); at != std::string::npos; at = out.find("run ", at + 1)) {
    auto id = out.substr(at + 4, 8);
    if (id.size() == 8 && id.find_first_not_of("0123456789abcdef") == std::string::npos
        && out.size() > at + 12 && out[at + 12] == ' ')
      return id;
  }
  throw std::runtime_error("no run id in: " + out);
}

/// Sends `sig` to the pid that the JSON file `file` names (a background server's server.json, an
/// agent's agent.json); the pid, or nullopt when the file names none.
inline std::optional<pid_t> signal_pid_in(const std::filesystem::path& file, int sig) {
  std::ifstream in{file};
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j["pid"].is_number_integer())
    return std::nullopt;
  auto pid = j["pid"].get<pid_t>();
  ::kill(pid, sig);
  return pid;
}

/// Whatever a test does, a server it started in the background (`cdui start`) on `home` does not
/// outlive it: killed by the pid in server.json.
struct background_server_guard {
  std::filesystem::path home;
  ~background_server_guard() { (void)signal_pid_in(home / "server.json", SIGKILL); }
};

/// The pids of the processes whose command line (its arguments joined by NULs) `matches`.
template <class Match>
std::vector<pid_t> processes_with(Match matches) {
  std::vector<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator{"/proc"}) {
    auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::string cmdline;
    try {
      std::ifstream in{entry.path() / "cmdline", std::ios::binary};
      cmdline.assign(std::istreambuf_iterator<char>{in}, {});
    } catch (const std::ios_base::failure&) {
      continue;  // it ended while being read (libstdc++ throws on ESRCH): not running any more
    }
    if (matches(cmdline))
      pids.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return pids;
}

/// The pids of `cdui exec` processes (a worker's, or a server's with --isolation process) whose
/// run folder is under `home`; with `run_id`, of that run only.
inline std::vector<pid_t> run_processes(const std::filesystem::path& home, const std::string& run_id = "") {
  return processes_with([&](const std::string& cmdline) {
    auto exec = cmdline.find(std::string{"exec"} + '\0');
    auto folder = cmdline.find('\0' + home.string());
    return exec != std::string::npos && folder != std::string::npos && exec < folder
           && (run_id.empty() || cmdline.find("/" + run_id + '\0', folder) != std::string::npos);
  });
}

inline std::vector<pid_t> run_processes(const temp_home& home, const std::string& run_id = "") {
  return run_processes(home.path(), run_id);
}

/// Whatever a test leaves, no run process of its home outlives it (they have their own sessions).
struct run_process_guard {
  const temp_home& home;
  ~run_process_guard() {
    for (auto pid : run_processes(home))
      ::kill(pid, SIGKILL);
  }
};

/// The worker `name` in GET /api/workers, or null.
inline nlohmann::json worker(const server_process& srv, const std::string& name) {
  auto listing = srv.get_json("/api/workers");  // a named object: a range over a temporary's member dangles
  for (const auto& w : listing["workers"])
    if (w["name"] == name)
      return w;
  return nullptr;
}

/// Polls GET /api/workers until the worker has `status`; its entry.
inline nlohmann::json await_worker(const server_process& srv, const std::string& name,
                                   const std::string& status,
                                   std::chrono::seconds timeout = std::chrono::seconds(30)) {
  nlohmann::json w;
  if (!eventually([&] { w = worker(srv, name); return !w.is_null() && w["status"] == status; }, timeout))
    throw std::runtime_error("worker " + name + " never became " + status + ": " + w.dump());
  return w;
}

/// The zmq_bridge's state under the worker_registry in GET /api/status.
inline nlohmann::json bridge_state(const server_process& srv) {
  auto status = srv.get_json("/api/status");
  for (const auto& child : status["children"])
    if (child["kind"] == "worker_registry")
      for (const auto& c : child["children"])
        if (c["kind"] == "zmq_bridge")
          return c["state"];
  throw std::runtime_error("no zmq_bridge under worker_registry in GET /api/status");
}

} // namespace cdui::test
