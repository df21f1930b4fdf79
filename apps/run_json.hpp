#pragma once

#include <nlohmann/json.hpp>

#include "messages/run_request.hpp"

namespace cdui::apps {

/// The run object of GET /api/runs and GET /api/runs/{id} (docs/http-api.md, "The run object"), and
/// of `cdui runs --json` and `cdui show --json`.
[[nodiscard]] nlohmann::json run_json(const run_info& run);

/// The device option a run asked for (null: none), beside what it got (its queue_key): a fallback
/// may differ.
[[nodiscard]] nlohmann::json device_requested(const nlohmann::json& options);

/// The device a run got, and the one it asked for when a fallback gave another kind: "cpu (asked
/// cuda)".
[[nodiscard]] std::string device_text(const run_info& run);

/// A run object read back; fields that are missing or of another type keep their defaults, and an
/// unknown status reads as failed (the answer may come from any server).
[[nodiscard]] run_info run_from_json(const nlohmann::json& j);

} // namespace cdui::apps
