#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/validate.hpp"

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
  bool deterministic = false;
  bool record_outputs = false;
  /// Where the run executes: empty or "local" (this server), or a worker's name.
  std::string target;
  /// A device set: on this server, the run holds a slot on each; on a worker, it sees them all.
  std::vector<std::string> devices;
  /// The run's memory budget per card, in GiB (options.target.memory_gib): its allocator is capped
  /// there on sim cards and the CPU, and a card shared by memory admits it by it.
  std::optional<double> memory_gib;
  /// The same budget as a size ("64M", "1.5GiB"); empty: none given.
  std::string memory;
  /// `--set NODE.PARAM=VALUE`, in the order given: params set on top of the graph file's.
  std::vector<std::string> overrides;
  /// `--resume PATH` (options.resume_from): a TrainingLoop checkpoint, or a run's folder.
  std::string resume;
  /// Submit and exit at once (a running server only); otherwise wait for the run's end.
  bool detach = false;
  /// Stop waiting after this many seconds (the run continues on a server; embedded, it is cancelled).
  std::optional<double> timeout_s;
};

/// A graph file's text; nullopt after saying why it cannot be read ("cannot read x.json: no such
/// file").
[[nodiscard]] std::optional<std::string> read_graph_file(const std::filesystem::path& file);

/// A graph file's text and its validated form.
struct loaded_graph {
  std::string text;
  runtime::validated_graph graph;
};

/// A graph file, read and validated; nullopt after printing why it cannot be read or is not valid
/// (naming the file and each node and param at fault).
/// Validates a graph's text; prints why it is not valid (naming the file) and returns nullopt.
[[nodiscard]] std::optional<loaded_graph> check_graph(const std::filesystem::path& file, std::string text);

[[nodiscard]] std::optional<loaded_graph> load_graph(const std::filesystem::path& file);

/// A `--memory SIZE` option in bytes; nullopt after printing why it is not a size
/// ("cdui: --memory: 'lots' is not a size (e.g. 8GiB, 512MiB, 64M)").
[[nodiscard]] std::optional<std::int64_t> memory_option(const std::string& text);

/// `cdui validate GRAPH.json`.
[[nodiscard]] int validate_command(const std::filesystem::path& graph_file);

/// `cdui run GRAPH.json`: as a client of the server running on $CODEFYUI_HOME, else on the embedded
/// runtime (it says which). Prints the run's progress and final metrics. Ctrl+C stops following a
/// server's run (it continues there) and cancels an embedded one.
[[nodiscard]] int run_command(const run_command_options& options);

/// `cdui devices`: what this host offers.
[[nodiscard]] int devices_command();

} // namespace cdui::apps
