#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/validate.hpp"

namespace cdui::runtime {

/// A key per node (keys[i] belongs to g.nodes[i]) that changes when the node's type or params
/// change, when the run's device or seed changes, or when anything upstream of it changes: two
/// runs whose node has the same key compute that node from the same inputs the same way. The
/// execution cache keys node outputs by it ("edit one node, only that subtree re-runs").
[[nodiscard]] std::vector<std::string> node_keys(const validated_graph& graph,
                                                 const std::string& run_device, std::uint64_t seed);

/// A key for what a model node builds: its id, type and params, nothing upstream. The node state
/// store keys persistent weights by it, so an edited architecture starts from fresh weights.
[[nodiscard]] std::string model_state_key(const graph_node& node);

/// A digest of every node type the registry knows, with its params (and their defaults) and
/// ports: two processes with the same digest run the same graphs the same way. A worker whose
/// digest differs from the server's is Degraded (docs/workers.md, "Statuses").
[[nodiscard]] std::string node_types_digest(const node_registry& registry = builtin_registry());

} // namespace cdui::runtime
