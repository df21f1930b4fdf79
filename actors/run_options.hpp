#pragma once

#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "messages/run_request.hpp"

namespace cdui::actors {

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

} // namespace cdui::actors
