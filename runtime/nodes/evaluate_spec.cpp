// The EvaluateModel node spec: params, ports and checks, torch-free (runtime/nodes/evaluate.cpp runs it).
#include <cmath>

#include "runtime/nodes/builtin.hpp"

namespace cdui::runtime::nodes {

void register_evaluate_node(node_registry& registry) {
  node_spec spec;
  spec.type = "EvaluateModel";
  spec.help = "Accuracy (for classes) and loss (with a loss_fn) of a model over a DataLoader.";
  spec.inputs = {
    {"model", port_type::model, true, ""},
    {"dataloader", port_type::dataloader, true, ""},
    {"loss_fn", port_type::loss_fn, false, "report the loss too"},
  };
  spec.outputs = {{"metrics", port_type::metrics, true, "accuracy, loss, samples"}};
  registry.add(std::move(spec));
}

} // namespace cdui::runtime::nodes
