#pragma once

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "integration/process.hpp"
#include "unit/test_home.hpp"

namespace cdui::test {

/// A real `cdui start --foreground` on 127.0.0.1 with a free port, on a given home; the test talks to
/// it over HTTP with the token from its 0600 file. The destructor stops it (SIGTERM, then SIGKILL).
class server_process {
public:
  server_process(const temp_home& home, std::map<std::string, std::string> env = {})
    : home_(home.path()) {
    env["CODEFYUI_HOME"] = home_.string();
    if (!env.count("CODEFYUI_SIM_DEVICES"))
      env["CODEFYUI_SIM_DEVICES"] = "1x1GiB";
    std::error_code ec;
    std::filesystem::remove(home_ / "server.json", ec);
    proc_ = std::make_unique<process>(
      std::vector<std::string>{CDUI_BINARY, "start", "--foreground", "--port", "0"}, env);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in{home_ / "server.json"};
      auto j = nlohmann::json::parse(in, nullptr, false);
      if (j.is_object() && j["pid"] == proc_->pid()) {
        port_ = j["port"].get<int>();
        std::ifstream token{home_ / "session.token"};
        std::getline(token, token_);
        return;
      }
      if (proc_->wait_for(std::chrono::milliseconds(0)))
        throw std::runtime_error("the server exited at start: " + proc_->err());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("the server did not write server.json in 60 s: " + proc_->err());
  }

  ~server_process() {
    if (!proc_->wait_for(std::chrono::milliseconds(0))) {
      proc_->signal(SIGTERM);
      proc_->wait_for(std::chrono::seconds(60));
    }
  }

  [[nodiscard]] httplib::Client client() const {
    httplib::Client c{"127.0.0.1", port_};
    c.set_read_timeout(std::chrono::seconds(120));
    c.set_tcp_nodelay(true);
    return c;
  }
  [[nodiscard]] httplib::Headers auth() const { return {{"X-CodefyUI-Token", token_}}; }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] process& proc() { return *proc_; }

  /// POST /api/runs with the token; the response (status and body).
  httplib::Result submit(const nlohmann::json& body) const {
    return client().Post("/api/runs", auth(), body.dump(), "application/json");
  }

  /// POST /api/runs that must be accepted; the run's id. Throws with the answer otherwise.
  std::string submit_ok(const nlohmann::json& body) const {
    auto res = submit(body);
    if (!res || res->status != 200)
      throw std::runtime_error("POST /api/runs was refused: "
                               + (res ? std::to_string(res->status) + " " + res->body : "no answer"));
    return nlohmann::json::parse(res->body)["run_id"].get<std::string>();
  }

  /// POST /api/runs/{id}/cancel.
  void cancel(const std::string& id) const {
    client().Post(("/api/runs/" + id + "/cancel").c_str(), auth(), "", "application/json");
  }

  /// Polls GET /api/runs/{id} until it has `status`; throws after `timeout`.
  void await_status(const std::string& id, const std::string& status,
                    std::chrono::seconds timeout = std::chrono::seconds(60)) const {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (get_json("/api/runs/" + id)["status"] != status) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("run " + id + " never reached " + status + ": "
                                 + get_json("/api/runs/" + id).dump() + "; the queues: "
                                 + get_json("/api/status")["children"][0]["state"].dump());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  nlohmann::json get_json(const std::string& path) const {
    auto res = client().Get(path.c_str());
    if (!res)
      throw std::runtime_error("GET " + path + " got no answer");
    return nlohmann::json::parse(res->body);
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

  /// Polls GET /api/runs/{id} until its status is final; the run's JSON.
  nlohmann::json wait_final(const std::string& id, std::chrono::seconds timeout = std::chrono::seconds(240)) const {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto run = get_json("/api/runs/" + id);
      if (run["active"] == false)
        return run;
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("run " + id + " did not end in time: " + run.dump());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

private:
  std::filesystem::path home_;
  std::unique_ptr<process> proc_;
  int port_ = 0;
  std::string token_;
};

/// One `cdui` command with `env`, waited for (2 minutes at most): its exit code, stdout, stderr.
inline std::tuple<int, std::string, std::string> run_cli(std::vector<std::string> args,
                                                         const std::map<std::string, std::string>& env) {
  args.insert(args.begin(), CDUI_BINARY);
  process p{args, env};
  auto code = p.wait_for(std::chrono::seconds(120));
  if (!code)
    throw std::runtime_error("cdui " + args.at(1) + " did not exit in 2 minutes: " + p.err());
  return {*code, p.out(), p.err()};
}

/// Whatever a test does, a server it started in the background (`cdui start`) on `home` does not
/// outlive it: killed by the pid in server.json.
struct background_server_guard {
  std::filesystem::path home;
  ~background_server_guard() {
    std::ifstream in{home / "server.json"};
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_object() && j["pid"].is_number_integer())
      ::kill(j["pid"].get<int>(), SIGKILL);
  }
};

} // namespace cdui::test
