// DataLoader node: batches over a dataset held in memory, shuffled from the run's generator.
#include <torch/torch.h>

#include "runtime/node_call.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/nodes/values.hpp"

namespace cdui::runtime::nodes {

at::Tensor epoch_order(const loader_value& loader, at::Generator& rng) {
  if (!loader.shuffle)
    return {};
  return torch::randperm(loader.dataset->size(), rng, torch::kInt64);
}

batch get_batch(const loader_value& loader, const at::Tensor& order, std::int64_t b) {
  const auto& d = *loader.dataset;
  auto start = b * loader.batch_size;
  auto length = std::min(loader.batch_size, (order.defined() ? order.size(0) : d.size()) - start);
  if (!order.defined())
    return {d.inputs.narrow(0, start, length), d.targets.narrow(0, start, length)};
  auto idx = order.narrow(0, start, length);
  return {d.inputs.index_select(0, idx), d.targets.index_select(0, idx)};
}

namespace {

port_values run_data_loader(node_call& call) {
  auto loader = std::make_shared<loader_value>();
  loader->dataset = call.input<dataset_value>("dataset");
  loader->batch_size = call.int_param("batch_size");
  loader->shuffle = call.bool_param("shuffle");
  loader->drop_last = call.bool_param("drop_last");
  if (loader->num_batches() == 0)
    throw node_error("param 'batch_size': " + std::to_string(loader->batch_size)
                     + " is larger than the dataset (" + std::to_string(loader->dataset->size())
                     + " samples) and drop_last is on, so there is no batch");
  call.final_metrics = {{"batches", loader->num_batches()}};
  return {{"dataloader", make_value(std::move(loader))}};
}

} // namespace

void bind_data_loader_node_runs(node_runs& runs) {
  runs["DataLoader"] = run_data_loader;
}

} // namespace cdui::runtime::nodes
