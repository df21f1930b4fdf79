#pragma once

#include <string_view>
#include <variant>
#include <vector>

#include "runtime/graph.hpp"
#include "runtime/node_spec.hpp"

namespace cdui::runtime {

/// A graph that passed validation: params carry their defaults, `order` is a topological order of
/// node indexes, and every node's spec is known.
struct validated_graph {
  graph g;
  std::vector<std::size_t> order;
  std::vector<const node_spec*> specs;  // specs[i] belongs to g.nodes[i]
};

using validation_result = std::variant<validated_graph, std::vector<graph_error>>;

/// Parses and validates a graph's JSON text. Malformed JSON is reported with its line and column;
/// every other error names the node id and the param or port it is about.
[[nodiscard]] validation_result validate_graph(std::string_view json_text,
                                               const node_registry& registry = builtin_registry());

/// The same for a std::string (which would otherwise convert to both string_view and json).
[[nodiscard]] inline validation_result validate_graph(const std::string& json_text,
                                                      const node_registry& registry = builtin_registry()) {
  return validate_graph(std::string_view{json_text}, registry);
}

/// The same, for JSON already parsed.
[[nodiscard]] validation_result validate_graph(const nlohmann::json& doc,
                                               const node_registry& registry = builtin_registry());

} // namespace cdui::runtime
