#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "messages/worker.hpp"

namespace cdui {

/// A worker agent (docs/workers.md): it joins a server over ZeroMQ, offers this machine's devices,
/// keeps saying it is alive, and executes each run it is given in a subprocess of its own (`cdui
/// exec RUNDIR`, under $CODEFYUI_HOME/agents/<name>/runs/), so that a crash ends that run alone.
/// The run sees only its own cards, renumbered from 0. Next to `cdui start` it needs nothing: it
/// reads the server's endpoint and session token from the home, and finds the server again when it
/// restarts (on the same endpoint, or on a new one).
///
/// A facade over an actor system of its own (actors/agent/): the `agent` actor holds the connection
/// and one `run_supervisor` actor per run follows that run's process.
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
    /// Called on the agent's own thread each time a server welcomes it (`cdui agent start`
    /// marks agent.json, so that it returns once the worker can take runs).
    std::function<void()> on_joined;
    /// Its machine leaves with it (`--ephemeral`: a SLURM allocation, a Kubernetes pod): when it
    /// stops, its goodbye tells the server, which ends its runs interrupted at once, and it kills
    /// their processes. Otherwise they go on, and a restarted agent finds them.
    bool ephemeral = false;
    /// Where rank 0 of a DDP run across workers that this worker holds hosts the ranks' store: an
    /// address the other workers reach (--rendezvous-host). Empty: 127.0.0.1 when the server is
    /// on this machine (its home's, or a loopback endpoint), else this machine's hostname.
    std::string rendezvous_host;
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

  /// The name an agent has when none is given: this machine's hostname.
  [[nodiscard]] static std::string default_name();

private:
  config cfg_;
  std::vector<device_offer> offers_;
  std::string environment_;
  std::atomic<bool> stop_{false};
};

} // namespace cdui
