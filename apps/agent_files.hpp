#pragma once

// What agents/<name>/ holds of a running agent (agent.json, agent.lock), read and written by
// `cdui agent start` and read by `cdui agent list` and `cdui agent stop`.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cdui::apps {

[[nodiscard]] std::filesystem::path agent_dir(const std::filesystem::path& home, const std::string& name);

/// What agents/<name>/agent.json says of a running agent: its pid, the server it joins (a
/// --server endpoint; empty: the server of its home) and since when it runs.
struct agent_record {
  std::string name;
  int pid = 0;
  std::string server;
  std::int64_t started_ms = 0;
  /// When a server last welcomed it; 0: not yet.
  std::int64_t joined_ms = 0;
};

void write_agent_json(const std::filesystem::path& dir, const agent_record& r);
[[nodiscard]] std::optional<agent_record> read_agent(const std::filesystem::path& dir);
[[nodiscard]] std::optional<int> agent_pid(const std::filesystem::path& dir);
/// Whether the agent of that folder runs (it holds its agent.lock).
[[nodiscard]] bool agent_running(const std::filesystem::path& dir);
/// The agents running on `home` now (each holds its agents/<name>/agent.lock), by name.
[[nodiscard]] std::vector<agent_record> running_agents(const std::filesystem::path& home);

} // namespace cdui::apps
