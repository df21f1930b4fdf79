#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace cdui::apps {

struct estimate_command_options {
  /// Empty: the estimate from a parameter count.
  std::filesystem::path graph_file;
  /// The device to estimate for; empty: the TrainingLoop's own.
  std::string device;
  /// The cards of a device set the run would take (the figure is per card).
  std::int64_t cards = 1;
  /// Print the JSON that POST /api/estimate answers instead of the table.
  bool json = false;
  /// The flags of an estimate from a parameter count that were given, by the API's field names
  /// (parameters, precision, optimizer, trainable, state_precision).
  std::map<std::string, std::string> parameter_flags;
};

/// `cdui estimate GRAPH.json [--cards N] [--device D] [--json]`: the static memory estimate of the
/// graph's training run, term by term, computed here from the layer shapes (no server, no tensor).
/// `cdui estimate --parameters N [--precision P] [--optimizer O] [--trainable S]
/// [--state-precision P] [--json]`: the weights, gradients and optimizer state of a model known by
/// its parameter count (docs/training-memory.md, "From a parameter count").
/// Exit 0 with a figure, 1 for a rough estimate (the reason, no figure), 2 for a bad command line
/// or a graph that cannot be read or is invalid.
[[nodiscard]] int estimate_command(const estimate_command_options& options);

} // namespace cdui::apps
