#include "runtime/node_keys.hpp"

#include <algorithm>
#include <cstdint>

#include "messages/digest.hpp"

namespace cdui::runtime {

namespace {

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
    keys[i] = fnv1a_hex(text);
  }
  return keys;
}

std::string model_state_key(const graph_node& node) {
  return node.id + ":" + fnv1a_hex(own_text(node));
}

std::string node_types_digest(const node_registry& registry) {
  std::string text;
  for (const auto& [type, spec] : registry.all()) {
    text += type + '(';
    for (const auto& p : spec.params)
      text += p.name + '=' + p.default_value.dump() + ',';
    text += ")<";
    for (const auto& in : spec.inputs)
      text += in.name + ':' + in.type + ',';
    text += ">>";
    for (const auto& out : spec.outputs)
      text += out.name + ':' + out.type + ',';
    text += '\n';
  }
  return fnv1a_hex(text);
}

} // namespace cdui::runtime
