#pragma once

#include <string>
#include <vector>

#include "messages/fields.hpp"
#include "messages/run_status.hpp"

namespace cdui {

/// How an executor ended a run: the final status, the error sentence when it failed, and the final
/// metrics of every node as a JSON object {node id: {name: value}}.
struct run_outcome {
  run_status status = run_status::succeeded;
  std::string error;
  std::string final_metrics = "{}";
  CDUI_FIELDS(status, error, final_metrics)
};

/// A run_warning a run starts with (a device_fallback, say), told at submit too.
struct submit_warning {
  std::string kind;
  std::string message;
  CDUI_FIELDS(kind, message)
};

/// The answer to a submit: a run id, or the sentence that says why the run was refused.
/// `unavailable` marks a refusal that is about now, not about the request (the server is shutting
/// down, the interactive lane is full): HTTP says 503 for it, 400 otherwise. An accepted run's
/// `warnings` are the run_warning events it starts with.
struct submit_result {
  std::string run_id;
  std::string error;
  bool unavailable = false;
  std::vector<submit_warning> warnings;
  [[nodiscard]] bool ok() const { return error.empty(); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, submit_result& x) {
  return f(x.run_id, x.error, x.unavailable, x.warnings);
}

/// The answer to a delete.
enum class erase_result { erased, unknown, active };

} // namespace cdui
