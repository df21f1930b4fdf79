#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cdui {

/// `j` as JSON text that cannot throw on bad bytes: a string holding bytes that are not UTF-8
/// (a path, a query, a data file's label) is written with U+FFFD in their place. Use it wherever
/// JSON is serialised; nlohmann's plain dump() throws type_error 316 on such a string.
[[nodiscard]] inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// nlohmann's sentence for `e`, without the "[json.exception.parse_error.101] " it starts with.
[[nodiscard]] inline std::string json_error_sentence(const nlohmann::json::exception& e) {
  std::string_view what = e.what();
  auto bracket = what.rfind("] ", what.find(' '));
  return std::string{bracket == std::string_view::npos ? what : what.substr(bracket + 2)};
}

/// How deep a JSON text from outside may nest. A graph nests about 8 levels; nlohmann's parser,
/// copy and dump recurse once per level, so 100,000 levels (200 KB of brackets) overflowed a
/// thread's stack and ended the server (issue 33).
inline constexpr int max_json_depth = 256;

/// What json_depth_limit throws when a text nests deeper than max_json_depth.
struct json_too_deep : std::runtime_error {
  json_too_deep()
      : std::runtime_error("it nests objects and arrays deeper than " + std::to_string(max_json_depth)
                           + " levels") {}
};

/// nlohmann's parser callback that stops the parse (json_too_deep) before it opens an object or
/// array past max_json_depth, so nothing deeper is ever built: `json::parse(text, json_depth_limit)`.
inline bool json_depth_limit(int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
  using e = nlohmann::json::parse_event_t;
  if ((event == e::object_start || event == e::array_start) && depth >= max_json_depth)
    throw json_too_deep{};
  return true;
}

/// A JSON text read from outside: the value, or why there is none.
struct parsed_json {
  nlohmann::json value;
  /// Empty when `value` holds the text's value; otherwise what was wrong and where.
  std::string error;
  [[nodiscard]] bool ok() const { return error.empty(); }
};

/// Parses a JSON text from outside (an HTTP body, a graph file): such texts come through here, or
/// through json_depth_limit where the caller reports parse errors its own way (validate_graph).
[[nodiscard]] inline parsed_json parse_json_text(std::string_view text) {
  parsed_json out;
  try {
    out.value = nlohmann::json::parse(text, json_depth_limit);
  } catch (const json_too_deep& e) {
    out.error = e.what();
  } catch (const nlohmann::json::exception& e) {
    out.error = json_error_sentence(e);
  }
  if (!out.ok())
    out.value = nlohmann::json(nlohmann::json::value_t::discarded);
  return out;
}

} // namespace cdui
