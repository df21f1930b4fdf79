#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace cdui {

/// `j` as JSON text that cannot throw on bad bytes: a string holding bytes that are not UTF-8
/// (a path, a query, a data file's label) is written with U+FFFD in their place. Use it wherever
/// JSON is serialised; nlohmann's plain dump() throws type_error 316 on such a string.
[[nodiscard]] inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace cdui
