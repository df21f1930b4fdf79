#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "messages/worker.hpp"

namespace zmq {
class socket_t;
}

namespace cdui {

/// A worker agent (seed 001, "Start a worker on this machine"): it joins a server over ZeroMQ,
/// offers this machine's devices, keeps saying it is alive, and executes each run it is given in
/// a subprocess of its own (`cdui exec RUNDIR`, under $CODEFYUI_HOME/agents/<name>/runs/), so that
/// a crash ends that run alone. The run sees only its own cards, renumbered from 0. Next to
/// `cdui start` it needs nothing: it reads the server's endpoint and session token from the home,
/// and finds the server again when it restarts (on the same endpoint, or on a new one).
class agent {
public:
  struct config {
    /// The home of the server it joins (server.json, session.token); default $CODEFYUI_HOME.
    std::filesystem::path home;
    /// The worker's name; default: this machine's hostname.
    std::string name;
    /// The devices to offer besides the CPU, by this machine's names (cuda:0, sim:1); empty: all.
    std::vector<std::string> devices;
    /// Simulated cards this agent offers, e.g. "2x8GiB"; empty: $CODEFYUI_SIM_DEVICES.
    std::string sim_devices;
    bool one_shot = false;
    /// A remote agent's server, tcp://HOST:PORT; empty: the server of `home` (server.json).
    std::string server;
    /// The file holding its enrolled credential (first line); empty: the session token of `home`.
    std::filesystem::path credential_file;
    /// The server's CURVE public key (Z85) for an encrypted wire; empty: server.json's, if any.
    std::string server_key;
  };

  /// Probes the devices; throws std::invalid_argument naming a bad --devices entry, sim spec,
  /// --server endpoint, --server-key, or a --credential file it cannot read.
  explicit agent(config cfg);

  /// Runs until stop() or until the server refuses the agent for good (another version, a bad
  /// credential, a newer agent with its name). Returns nullopt after stop(), else that reason.
  std::optional<std::string> run();

  /// Asks run() to return (thread-safe, and safe from a signal handler's flag poller).
  void stop() { stop_ = true; }

  [[nodiscard]] const std::string& name() const { return cfg_.name; }
  /// The remote server's endpoint it was given; empty: the server of its home.
  [[nodiscard]] const std::string& server() const { return cfg_.server; }

  /// The name an agent has when none is given: this machine's hostname (seed 001).
  [[nodiscard]] static std::string default_name();

private:
  /// A run this agent executes: its subprocess, folder, and how much of its event log was sent
  /// (bytes read, and the last event cursor sent). A run whose process has ended keeps its outcome
  /// here until the server acknowledges it (run_ack), and is sent again after each reconnect.
  struct running_run {
    int pid = -1;
    std::filesystem::path dir;
    /// False for a run an earlier agent process started: not our child, watched through /proc.
    bool child = true;
    std::uint64_t sent_bytes = 0;
    std::uint64_t sent_cursor = 0;
    std::optional<run_outcome> ended;
    /// Whether run_done went out since the last (re)connect; it follows the run's last event.
    bool end_sent = false;
    /// The server no longer follows it: stop it, report nothing.
    bool forgotten = false;
  };

  [[nodiscard]] hello make_hello() const;
  [[nodiscard]] std::vector<std::string> running_ids() const;
  /// Prepares the run's folder and starts its subprocess; the reason when it cannot.
  std::optional<std::string> start_run(const assign_run& a);
  /// Events the run appended since the last call, in order.
  std::vector<run_event> new_events(running_run& r);
  /// Forwards new events of every run, and reports the runs whose process ended.
  void pump_runs(zmq::socket_t& socket);
  void stop_run_process(const stop_run& s);
  /// The runs an earlier agent process of this name left: still executing, or ended unreported.
  void recover_runs();
  /// A welcome's resume and forget lists; the ends the server has not acknowledged go again.
  void on_welcome(const welcome& w);
  /// Sends the run's events again after `cursor` (what the server has), then its end.
  void resend_from(const run_cursor& rc);
  /// The server recorded the run's end: it is forgotten here too.
  void on_ack(const std::string& run_id);
  /// The outputs a record_outputs run left in its folder, for the server.
  [[nodiscard]] outputs_reply outputs_of(const std::string& run_id) const;
  [[nodiscard]] std::filesystem::path runs_dir() const;

  config cfg_;
  std::map<std::string, running_run> runs_;
  /// A one-shot agent that has been given its run: it exits once that run is acknowledged.
  bool had_run_ = false;
  std::vector<device_offer> offers_;
  std::string environment_;
  std::atomic<bool> stop_{false};
};

} // namespace cdui
