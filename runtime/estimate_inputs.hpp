#pragma once
// What the static estimate (runtime/estimate.hpp) reads of a TrainingLoop's inputs in its graph:
// the nodes feeding it, the batch its DataLoader takes, the samples its Dataset gives and its Model
// node. Torch-free.

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "runtime/graph.hpp"
#include "runtime/layer_shapes.hpp"

namespace cdui::runtime {

/// Where a rough estimate comes from: thrown inside the estimate, caught once and turned into the
/// reason.
struct rough_reason {
  std::string text;
};

/// The graph's nodes by id and the node feeding each input port.
class graph_index {
public:
  explicit graph_index(const graph& g);

  [[nodiscard]] const graph_node* node(const std::string& id) const;

  /// The node connected to `port` of `node`; null when nothing is.
  [[nodiscard]] const graph_node* feeding(const graph_node& n, const std::string& port) const;

private:
  std::map<std::string, const graph_node*> nodes_;
  std::map<std::pair<std::string, std::string>, const port_ref*> feeds_;
};

/// What a Dataset node gives, as far as its params tell.
struct data_facts {
  std::optional<sample_shape> shape;  // nullopt: the graph does not say (a CSV's columns)
  std::optional<std::int64_t> samples;
  bool classification = true;
};

[[nodiscard]] data_facts dataset_facts(const graph_node& dataset);

/// A DataLoader and its dataset: the batch one step takes.
struct batch_facts {
  data_facts data;
  std::int64_t batch = 0;
};

/// The batch of `loader`, capped at its dataset's samples; throws rough_reason when it is not a
/// DataLoader reading a Dataset.
[[nodiscard]] batch_facts loader_facts(const graph_index& index, const graph_node& loader);

/// The Model node behind a loop's `model` input, through nodes that pass a model on; throws
/// rough_reason when there is none.
[[nodiscard]] const graph_node& model_node(const graph_index& index, const graph_node& loop);

} // namespace cdui::runtime
