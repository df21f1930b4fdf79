#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace cdui::apps {

struct estimate_command_options {
  std::filesystem::path graph_file;
  /// The device to estimate for; empty: the TrainingLoop's own.
  std::string device;
  /// The cards of a device set the run would take (the figure is per card).
  std::int64_t cards = 1;
  /// Print the JSON that POST /api/estimate answers instead of the table.
  bool json = false;
};

/// `cdui estimate GRAPH.json [--cards N] [--device D] [--json]`: the static memory estimate of the
/// graph's training run, term by term, computed here from the layer shapes (no server, no tensor).
/// Exit 0 with a figure, 1 for a rough estimate (the reason, no figure), 2 for a bad command line
/// or a graph that cannot be read or is invalid.
[[nodiscard]] int estimate_command(const estimate_command_options& options);

} // namespace cdui::apps
