#include "runtime/node_keys.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace cdui::runtime {

namespace {

/// FNV-1a, 64 bits: stable across processes and builds (std::hash is not), enough for a cache key.
std::uint64_t fnv1a(const std::string& text, std::uint64_t h = 14695981039346656037ULL) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string hex(std::uint64_t x) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

/// Type and params, written canonically (nlohmann's objects are sorted by key).
std::string own_text(const graph_node& node) {
  return node.type + '\n' + node.params.dump() + '\n';
}

} // namespace

std::vector<std::string> node_keys(const validated_graph& graph, const std::string& run_device,
                                   std::uint64_t seed) {
  const auto& nodes = graph.g.nodes;
  std::vector<std::string> keys(nodes.size());
  auto index_of = [&](const std::string& id) {
    return static_cast<std::size_t>(
      std::find_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.id == id; })
      - nodes.begin());
  };
  // Topological order: every input's key is known before the node's.
  for (auto i : graph.order) {
    std::vector<std::string> inputs;
    for (const auto& e : graph.g.edges)
      if (e.to.node == nodes[i].id)
        inputs.push_back(e.to.port + "<-" + keys[index_of(e.from.node)] + "." + e.from.port);
    std::sort(inputs.begin(), inputs.end());
    // The seed: datasets, weights and the shuffle all draw from generators seeded by it.
    auto text = run_device + '\n' + std::to_string(seed) + '\n' + own_text(nodes[i]);
    for (const auto& in : inputs)
      text += in + '\n';
    keys[i] = hex(fnv1a(text));
  }
  return keys;
}

std::string model_state_key(const graph_node& node) {
  return node.id + ":" + hex(fnv1a(own_text(node)));
}

} // namespace cdui::runtime
