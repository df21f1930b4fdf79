#pragma once

#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "messages/run_request.hpp"

namespace cdui::policy {

/// run_request::worker for target {"pool": "one-shot"} (a worker name cannot hold a ':').
inline constexpr const char* one_shot_pool = "pool:one-shot";
/// run_request::worker for target {"worker": "any"}.
inline constexpr const char* any_worker = "any";

/// Whether a run's place is chosen when a slot frees, not when it is submitted.
[[nodiscard]] inline bool is_placed_later(const std::string& worker) {
  return worker == any_worker || worker == one_shot_pool;
}

/// The longest run name a submit accepts.
inline constexpr std::size_t max_run_name_length = 64;

/// Why a submit body was refused: `unprocessable` when the graph is missing or not an object (HTTP
/// 422), else a bad field (400). `message` names the field.
struct submission_error {
  bool unprocessable = false;
  std::string message;
};

/// Reads a POST /api/runs body {graph, options?, name?} into a request; every refusal names the field.
[[nodiscard]] std::variant<run_request, submission_error> parse_submission(const nlohmann::json& body);

/// Reads an options object (device, seed, deterministic, record_outputs, lane, session,
/// weights_persistent, target) into `request`; returns the refusal's sentence, empty when all is well.
[[nodiscard]] std::string apply_options(const nlohmann::json& options, run_request& request);

/// The options of a request as an options object; apply_options reads it back to the same request.
[[nodiscard]] nlohmann::json options_json(const run_request& request);

} // namespace cdui::policy
