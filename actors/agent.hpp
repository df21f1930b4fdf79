#pragma once

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "messages/worker.hpp"

namespace cdui {

/// A worker agent (seed 001, "Start a worker on this machine"): it joins a server over ZeroMQ,
/// offers this machine's devices, and keeps saying it is alive. Next to `cdui start` it needs
/// nothing: it reads the server's endpoint and session token from the home, and finds the server
/// again when it restarts (on the same endpoint, or on a new one that server.json names).
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
  };

  /// Probes the devices; throws std::invalid_argument naming a bad --devices entry or sim spec.
  explicit agent(config cfg);

  /// Runs until stop() or until the server refuses the agent for good (another version, a bad
  /// credential, a newer agent with its name). Returns nullopt after stop(), else that reason.
  std::optional<std::string> run();

  /// Asks run() to return (thread-safe, and safe from a signal handler's flag poller).
  void stop() { stop_ = true; }

  [[nodiscard]] const std::string& name() const { return cfg_.name; }

  /// The name an agent has when none is given: this machine's hostname (seed 001).
  [[nodiscard]] static std::string default_name();

private:
  [[nodiscard]] hello make_hello() const;

  config cfg_;
  std::vector<device_offer> offers_;
  std::string environment_;
  std::atomic<bool> stop_{false};
};

} // namespace cdui
