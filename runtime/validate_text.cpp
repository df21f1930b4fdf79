// A graph's text: parsed with the nesting limit of every JSON from outside, and a parse that
// fails said as "malformed JSON at line L, column C: ..."; the value then goes to validate.cpp.
#include "runtime/validate.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "messages/json_text.hpp"

namespace cdui::runtime {

namespace {

/// The line and column of a byte offset in `text`, both 1-based.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

} // namespace

validation_result validate_graph(std::string_view json_text, const node_registry& registry) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text, json_depth_limit);
  } catch (const json_too_deep& e) {
    return std::vector<graph_error>{{"", "", std::string{"malformed JSON: "} + e.what()}};
  } catch (const nlohmann::json::parse_error& e) {
    auto [line, column] = line_column(json_text, e.byte == 0 ? 0 : e.byte - 1);
    std::string reason = e.what();
    // nlohmann's text starts "[json.exception.parse_error.101] parse error at line 1, column 2: ".
    if (auto colon = reason.find(": ", reason.find("parse error")); colon != std::string::npos)
      reason = reason.substr(colon + 2);
    return std::vector<graph_error>{
      {"", "", "malformed JSON at line " + std::to_string(line) + ", column "
                 + std::to_string(column) + ": " + reason}};
  } catch (const nlohmann::json::exception& e) {
    // Parses that fail past the syntax, such as a number too large for a double ("1e400").
    auto reason = json_error_sentence(e);
    // nlohmann names the offending literal in quotes but not where it is: find it in the text.
    auto open = reason.find('\''), close = reason.rfind('\'');
    if (open != std::string::npos && close > open) {
      if (auto at = json_text.find(reason.substr(open + 1, close - open - 1));
          at != std::string_view::npos) {
        auto [line, column] = line_column(json_text, at);
        return std::vector<graph_error>{
          {"", "", "malformed JSON at line " + std::to_string(line) + ", column "
                     + std::to_string(column) + ": " + reason}};
      }
    }
    return std::vector<graph_error>{{"", "", "malformed JSON: " + reason}};
  }
  return validate_graph(doc, registry);
}

} // namespace cdui::runtime
