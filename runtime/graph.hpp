#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cdui::runtime {

/// One node of a graph as written: its id, its type and its params.
struct graph_node {
  std::string id;
  std::string type;
  nlohmann::json params = nlohmann::json::object();
  /// The params the user wrote (the rest carry their defaults after validation).
  std::vector<std::string> given;

  [[nodiscard]] bool was_given(const std::string& param) const;
};

/// One end of an edge: "<node id>.<port>".
struct port_ref {
  std::string node;
  std::string port;
};

struct graph_edge {
  port_ref from;
  port_ref to;
};

/// A graph as the user wrote it. See docs/graph-format.md.
struct graph {
  std::vector<graph_node> nodes;
  std::vector<graph_edge> edges;
};

/// One thing wrong with a graph. `node` and `field` say where (either may be empty), `message` is the
/// whole sentence a person reads, already naming them.
struct graph_error {
  std::string node;
  std::string field;
  std::string message;
};

/// All errors as one text, one per line.
[[nodiscard]] std::string to_string(const std::vector<graph_error>& errors);

} // namespace cdui::runtime
