#pragma once

#include <filesystem>
#include <string>

namespace cdui::apps {

struct fit_options {
  std::filesystem::path graph_file;
  /// The card's size (--memory); empty: none given.
  std::string memory;
  /// --throughput: samples per second at each batch size that fits.
  bool throughput = false;
  /// --ladder: the recovery ladder from the graph's batch size instead of the search (docs/cli.md).
  bool ladder = false;
};

/// `cdui fit GRAPH.json --memory SIZE [--throughput | --ladder]`, or `--throughput` alone: real
/// training probes on a simulated card of SIZE (runtime/fit.hpp).
[[nodiscard]] int fit_command(const fit_options& options);

} // namespace cdui::apps
