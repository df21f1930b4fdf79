#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/graph.hpp"
#include "runtime/node_spec.hpp"

namespace cdui::runtime {

/// The graph's memory key (docs/graph-format.md, "The memory key"): what the server keys a graph's
/// measured peak memory by (docs/http-api.md, "Cards shared by memory"), so that "the same graph"
/// finds its peak. It covers the graph as it executes: node types, the params that shape its memory
/// or pick its data (a Dataset's name, batch sizes, layers, precision, accumulate_steps, ...) and
/// the wiring, topology included. Node ids, positions and labels, seeds, how long it runs (epochs,
/// max_steps, lr) and the loader's worker processes do not count. Params of node types `registry`
/// does not know (a plugin's) count, but for the universal exclusions. A known type's params count
/// with their defaults filled in, so a default written out or left out is the same graph. 64 hex
/// digits (SHA-256 of a canonical text that starts with a version line): stable across processes,
/// machines and cdui versions; see docs/graph-format.md for the table of what counts. Every edge of
/// `g` names nodes of `g` (as in a validated graph).
[[nodiscard]] std::string memory_key(const graph& g, const node_registry& registry = builtin_registry());

/// The same for a graph's JSON as written, node types this server does not know included; nullopt
/// when it is not a graph (no "nodes" list, a node without a string id and type, params that are
/// not an object, an edge that is not "<node id>.<port>" to "<node id>.<port>" between its nodes).
[[nodiscard]] std::optional<std::string> memory_key(const nlohmann::json& doc,
                                                    const node_registry& registry = builtin_registry());

/// Whether param `param` of a node of type `type` is part of the memory key.
[[nodiscard]] bool counts_for_memory(const std::string& type, const std::string& param);

} // namespace cdui::runtime
