#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace cdui::apps {

/// One `--set NODE.PARAM=VALUE` of `cdui run`: a param of one node, given on the command line.
struct param_override {
  std::string node;
  std::string param;
  /// VALUE read as JSON when it is JSON (512, 0.5, true, [1,2], "x"), else as the string itself
  /// (adam, sim:0).
  nlohmann::json value;
};

/// Reads one `--set` argument; the error says what the form is.
[[nodiscard]] std::variant<param_override, std::string> parse_override(std::string_view text);

/// Sets each override's param in `graph` (a graph JSON object), later ones winning. An override
/// whose node the graph does not have is refused naming it and the graph's nodes; a param the node
/// does not take is left for validation, which names the params it takes. Returns the error, or ""
/// when every override was applied.
[[nodiscard]] std::string apply_overrides(nlohmann::json& graph,
                                          const std::vector<param_override>& overrides);

} // namespace cdui::apps
