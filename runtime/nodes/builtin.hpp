#pragma once

#include "runtime/node_spec.hpp"

namespace cdui::runtime::nodes {

void register_dataset_nodes(node_registry& registry);
void register_data_loader_node(node_registry& registry);
void register_model_node(node_registry& registry);
void register_loss_and_optimizer_nodes(node_registry& registry);
void register_training_loop_node(node_registry& registry);
void register_evaluate_node(node_registry& registry);
void register_checkpoint_nodes(node_registry& registry);

} // namespace cdui::runtime::nodes
