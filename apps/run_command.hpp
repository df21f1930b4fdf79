#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace cdui::apps {

/// Exit codes of the CLI.
inline constexpr int exit_ok = 0;
inline constexpr int exit_run_failed = 1;  // the run failed or was cancelled
inline constexpr int exit_usage = 2;       // a bad command line or an invalid graph
inline constexpr int exit_interrupted = 130;

struct run_command_options {
  std::filesystem::path graph_file;
  std::string device;
  std::optional<std::uint64_t> seed;
  std::string name;
};

/// `cdui validate GRAPH.json`.
[[nodiscard]] int validate_command(const std::filesystem::path& graph_file);

/// `cdui run GRAPH.json` on the embedded runtime: queues the run, prints its progress and final
/// metrics, cancels it on Ctrl+C.
[[nodiscard]] int run_command(const run_command_options& options);

/// `cdui fit GRAPH.json --memory SIZE`: the largest batch_size whose training step fits, measured.
[[nodiscard]] int fit_command(const std::filesystem::path& graph_file, const std::string& memory);

/// `cdui devices`: what this host offers.
[[nodiscard]] int devices_command();

} // namespace cdui::apps
