#include "runtime/nodes/builtin.hpp"

namespace cdui::runtime {

const node_registry& builtin_registry() {
  static const node_registry registry = [] {
    node_registry r;
    nodes::register_dataset_nodes(r);
    nodes::register_data_loader_node(r);
    nodes::register_model_node(r);
    nodes::register_loss_and_optimizer_nodes(r);
    nodes::register_training_loop_node(r);
    nodes::register_evaluate_node(r);
    nodes::register_checkpoint_nodes(r);
    return r;
  }();
  return registry;
}

} // namespace cdui::runtime
