#include "runtime/estimate_inputs.hpp"

#include <algorithm>

namespace cdui::runtime {

graph_index::graph_index(const graph& g) {
  for (const auto& n : g.nodes)
    nodes_[n.id] = &n;
  for (const auto& e : g.edges)
    feeds_[{e.to.node, e.to.port}] = &e.from;
}

const graph_node* graph_index::node(const std::string& id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : it->second;
}

const graph_node* graph_index::feeding(const graph_node& n, const std::string& port) const {
  auto it = feeds_.find({n.id, port});
  return it == feeds_.end() ? nullptr : node(it->second->node);
}

data_facts dataset_facts(const graph_node& d) {
  const auto& p = d.params;
  auto name = p["name"].get<std::string>();
  data_facts f;
  if (name == "fashion_mnist" && d.was_given("root")) {
    // Files of its own: their image size and count are known only once the run reads them.
  } else if (name == "fashion_mnist") {
    f.shape = sample_shape{1, 28, 28};
    auto all = p["split"] == "test" ? 10'000 : 60'000;
    auto limit = p["limit"].get<std::int64_t>();
    f.samples = limit > 0 ? std::min<std::int64_t>(limit, all) : all;
  } else if (name == "moons" || name == "circles") {
    f.shape = sample_shape{2};
    f.samples = p["n_samples"].get<std::int64_t>();
  } else if (name == "blobs" || name == "regression") {
    f.shape = sample_shape{p["n_features"].get<std::int64_t>()};
    f.samples = p["n_samples"].get<std::int64_t>();
    f.classification = name == "blobs";
  } else {
    f.classification = p["task"] == "classification";
  }
  return f;
}

batch_facts loader_facts(const graph_index& index, const graph_node& loader) {
  if (loader.type != "DataLoader")
    throw rough_reason{"node '" + loader.id + "' (" + loader.type + ") gives batches the estimate "
                       "cannot size: no batch size"};
  const auto* dataset = index.feeding(loader, "dataset");
  if (dataset == nullptr || dataset->type != "Dataset")
    throw rough_reason{"DataLoader '" + loader.id + "' reads no Dataset node, so the samples' size "
                       "is unknown"};
  batch_facts b;
  b.data = dataset_facts(*dataset);
  b.batch = loader.params["batch_size"].get<std::int64_t>();
  if (b.data.samples)
    b.batch = std::min(b.batch, *b.data.samples);
  return b;
}

const graph_node& model_node(const graph_index& index, const graph_node& loop) {
  const auto* n = index.feeding(loop, "model");
  while (n != nullptr && n->type == "CheckpointLoader")
    n = index.feeding(*n, "model");
  if (n == nullptr || n->type != "Model")
    throw rough_reason{"the model of TrainingLoop '" + loop.id + "' does not come from a Model node"
                       + (n ? " ('" + n->id + "' is a " + n->type + ")" : "")
                       + ", so its layers cannot be counted"};
  return *n;
}

} // namespace cdui::runtime
