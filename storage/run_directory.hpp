#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "messages/run_event.hpp"

namespace cdui::storage {

/// A run's folder, $CODEFYUI_HOME/runs/<id>/: graph.json, events.jsonl (one event a line),
/// output.log (what a person reads) and checkpoints/. The server makes it when the run starts
/// (here or on a worker), not when it is queued: a queued run is in the store alone.
class run_directory {
public:
  /// Creates the folder and its checkpoints/ if needed, and writes graph.json.
  run_directory(const std::filesystem::path& home, const std::string& run_id,
                std::string_view graph_json);
  /// The same for the folder `path` itself.
  run_directory(std::filesystem::path path, std::string_view graph_json);

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::filesystem::path checkpoints() const { return path_ / "checkpoints"; }

  /// Appends the event to events.jsonl and a readable line to output.log; both are flushed.
  void append(const run_event& event);

private:
  std::filesystem::path path_;
  std::ofstream events_;
  std::ofstream log_;
};

/// The run's folder under `home` when it exists already (the run has started, or was queued by a
/// server that made folders at queueing); null when it does not, or cannot be opened.
[[nodiscard]] std::unique_ptr<run_directory> existing_run_directory(const std::filesystem::path& home,
                                                                    const std::string& run_id,
                                                                    std::string_view graph_json);

/// The human-readable line output.log gets for an event.
[[nodiscard]] std::string log_line(const run_event& event);

} // namespace cdui::storage
