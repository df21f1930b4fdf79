#pragma once

#include <filesystem>
#include <string>

namespace cdui::apps {

struct sweep_command_options {
  std::filesystem::path graph_file;
  /// {spec, objective, options?, name?}: a POST /api/sweeps body without its graph.
  std::filesystem::path spec_file;
  std::string name;
  /// Submit and return: the sweep goes on, `GET /api/sweeps/{id}` follows it.
  bool detach = false;
};

/// `cdui sweep GRAPH.json SPEC.json` against the running server: submits the sweep, then prints its
/// ranked table each time it changes, until it ends. Exit 0 when it finished, 1 when it failed,
/// was cancelled, or Ctrl+C stopped following it (the sweep goes on), 2 when it was refused.
[[nodiscard]] int sweep_command(const sweep_command_options& options);

/// `cdui study GRAPH.json SPEC.json` (SPEC: a POST /api/studies body without its graph): the same
/// for a study, its table the trials in number order with their last value and epochs.
[[nodiscard]] int study_command(const sweep_command_options& options);

} // namespace cdui::apps
