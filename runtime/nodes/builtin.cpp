#include "runtime/nodes/builtin.hpp"

namespace cdui::runtime::nodes {

const node_fn& builtin_run(const std::string& type) {
  static const node_runs runs = [] {
    node_runs r;
    bind_dataset_nodes_runs(r);
    bind_data_loader_node_runs(r);
    bind_model_node_runs(r);
    bind_loss_and_optimizer_nodes_runs(r);
    bind_training_loop_node_runs(r);
    bind_evaluate_node_runs(r);
    bind_checkpoint_nodes_runs(r);
    return r;
  }();
  return runs.at(type);
}

} // namespace cdui::runtime::nodes
