#pragma once

// The built-in node types, in two halves: each type's spec (params, ports, checks), torch-free in
// runtime/nodes/*_spec.cpp, which builtin_registry() collects; and what each type runs, in the
// node's own .cpp with libtorch, which builtin_run() finds by type name. So validation, the estimate
// and the keys need no libtorch, and `cdui validate` starts without it.

#include <map>
#include <string>

#include "runtime/node_spec.hpp"

namespace cdui::runtime::nodes {

/// Port type names; two ports connect only when these match.
namespace port_type {
inline constexpr const char* dataset = "dataset";
inline constexpr const char* dataloader = "dataloader";
inline constexpr const char* model = "model";
inline constexpr const char* loss_fn = "loss_fn";
inline constexpr const char* optimizer = "optimizer";
inline constexpr const char* scheduler = "scheduler";
inline constexpr const char* optimizer_state = "optimizer_state";
inline constexpr const char* metrics = "metrics";
inline constexpr const char* grad_scaler_state = "grad_scaler_state";
} // namespace port_type

/// Where the Fashion-MNIST files are unless a Dataset's `root` says otherwise.
inline constexpr const char* fashion_mnist_root = "/usr/share/datasets/fashion-mnist";

void register_dataset_nodes(node_registry& registry);
void register_data_loader_node(node_registry& registry);
void register_model_node(node_registry& registry);
void register_loss_and_optimizer_nodes(node_registry& registry);
void register_training_loop_node(node_registry& registry);
void register_evaluate_node(node_registry& registry);
void register_checkpoint_nodes(node_registry& registry);

/// What each built-in type runs, by type name.
using node_runs = std::map<std::string, node_fn>;

void bind_dataset_nodes_runs(node_runs& runs);
void bind_data_loader_node_runs(node_runs& runs);
void bind_model_node_runs(node_runs& runs);
void bind_loss_and_optimizer_nodes_runs(node_runs& runs);
void bind_training_loop_node_runs(node_runs& runs);
void bind_evaluate_node_runs(node_runs& runs);
void bind_checkpoint_nodes_runs(node_runs& runs);

/// What a built-in node type runs; throws std::out_of_range for a type that is not built in.
[[nodiscard]] const node_fn& builtin_run(const std::string& type);

} // namespace cdui::runtime::nodes
