#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/fields.hpp"
#include "messages/run_request.hpp"

namespace cdui {

/// The state a sweep keeps in cdui.db until it ends: "active" while its children run (GET then
/// derives queued, running or cancelling from them), else the final one (finished, failed,
/// cancelled), which its actor writes when the last child ends.
inline constexpr const char* sweep_active = "active";

/// A sweep as cdui.db keeps it: the request (graph, spec with its seed, objective and options as
/// JSON text) and where it stands.
struct sweep_record {
  std::string id;
  std::string name;
  std::string graph_json;
  std::string spec = "{}";
  std::string objective = "{}";
  std::string options = "{}";
  std::string state = sweep_active;
  /// A cancel was asked: its queued children are cancelled, its running ones stopped.
  bool cancel_asked = false;
  std::int64_t created_ms = 0;
  std::int64_t finished_ms = 0;
  CDUI_FIELDS(id, name, graph_json, spec, objective, options, state, cancel_asked, created_ms, finished_ms)
};

/// One variant of a sweep: its place, the run that executes it and its params ({"node.param":
/// value}, JSON text).
struct sweep_child {
  std::size_t index = 0;
  std::string params = "{}";
  run_info run;
};

/// What the run queue is asked to queue, all or nothing: the sweep, and each variant's run with
/// its params.
struct sweep_submission {
  sweep_record sweep;
  std::vector<run_request> runs;
  std::vector<std::string> params;
  CDUI_FIELDS(sweep, runs, params)
};

/// The answer: the sweep's id and its runs' ids, or why nothing was queued (`unavailable`: the
/// server's state, 503, rather than the request's, 400).
struct sweep_submit_result {
  std::string sweep_id;
  std::vector<std::string> run_ids;
  std::string error;
  bool unavailable = false;
  [[nodiscard]] bool ok() const { return error.empty(); }
  CDUI_FIELDS(sweep_id, run_ids, error, unavailable)
};

} // namespace cdui
