#pragma once

#include <string>
#include <vector>

namespace cdui::apps {

struct agent_options {
  std::string name;
  std::vector<std::string> devices;
  bool foreground = false;
  bool one_shot = false;
  bool ephemeral = false;
  std::string server;
  std::string credential_file;
  std::string server_key;
  std::string rendezvous_host;
};

/// `cdui agent start`: a worker agent that joins the server of this home, in the background (or
/// attached with --foreground).
[[nodiscard]] int agent_start_command(const agent_options& options);

/// `cdui agent stop [NAME]`: stops the agent of that name; without one, the only agent running on
/// this home, or (exit 2) the list of them when several run.
[[nodiscard]] int agent_stop_command(const std::string& name, int timeout_seconds);

/// `cdui agent list`: the agents running on this home: name, pid, since when, the server each joins.
[[nodiscard]] int agent_list_command();

/// `cdui workers`: the server's workers, their devices and status, and refused connections.
[[nodiscard]] int workers_command();

} // namespace cdui::apps
