#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/agent_command.hpp"
#include "apps/client_commands.hpp"

namespace cdui::apps {

/// `cdui agent start|stop|list` and `cdui workers [enroll|rekey|remove|drain|undrain|share|
/// exclusive]`: their options, bound to this object's members (so it stays where it is made).
struct worker_commands {
  agent_options agent_opts;
  std::string agent_stop_name;
  int agent_stop_timeout = 60;
  std::string worker_name;
  std::string worker_device;
  std::string server_host;
  CLI::App* agent_start = nullptr;
  CLI::App* agent_stop = nullptr;
  CLI::App* agent_list = nullptr;
  CLI::App* workers = nullptr;
  std::vector<std::pair<CLI::App*, worker_action>> worker_actions;

  worker_commands() = default;
  worker_commands(const worker_commands&) = delete;
  worker_commands& operator=(const worker_commands&) = delete;

  /// Adds the subcommands to `app`; agent start's --sim-devices goes to `sim_devices`.
  void add_to(CLI::App& app, std::string& sim_devices);
  /// Runs the one the command line named: its exit code; nullopt when it named none of them.
  [[nodiscard]] std::optional<int> run() const;
};

} // namespace cdui::apps
