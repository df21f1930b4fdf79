// The DataLoader node spec: params, ports and checks, torch-free (runtime/nodes/data_loader.cpp runs it).
#include <cmath>

#include "runtime/nodes/builtin.hpp"

namespace cdui::runtime::nodes {

void register_data_loader_node(node_registry& registry) {
  node_spec spec;
  spec.type = "DataLoader";
  spec.help = "Batches a dataset; reshuffles every epoch when shuffle is on.";
  spec.params = {
    {"batch_size", param_kind::integer, 32, 1, 1'000'000, {}, "samples per batch"},
    {"shuffle", param_kind::boolean, true, -INFINITY, INFINITY, {}, "a new order every epoch"},
    {"drop_last", param_kind::boolean, false, -INFINITY, INFINITY, {},
     "skip the last batch when it is short"},
  };
  spec.inputs = {{"dataset", port_type::dataset, true, "what to batch"}};
  spec.outputs = {{"dataloader", port_type::dataloader, true, "batches"}};
  registry.add(std::move(spec));
}

} // namespace cdui::runtime::nodes
