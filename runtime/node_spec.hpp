#pragma once

#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/graph.hpp"
#include "runtime/value.hpp"

namespace cdui::runtime {

class node_call;

/// `scalar` takes a string or a number (TrainingLoop.loss_scale: auto, dynamic, off or a number);
/// `object` a JSON object, whose fields the node's check reads (Model.lora).
enum class param_kind { integer, number, boolean, string, choice, list, scalar, object };

/// A param a node type takes: its JSON kind, its default (null: required), its range or choices.
struct param_spec {
  std::string name;
  param_kind kind = param_kind::number;
  nlohmann::json default_value;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;
  std::string help;

  [[nodiscard]] bool required() const { return default_value.is_null(); }
};

/// A port of a node type. Two ports connect only when their types are equal.
struct port_spec {
  std::string name;
  std::string type;
  bool required = true;
  std::string help;
  /// A required input that this param, when set (not empty), stands in for: a Model's dataset,
  /// for its input_shape.
  std::string unless_param{};
};

/// Runs one node: reads its params and inputs from the call, returns its outputs by port name.
using node_fn = std::function<port_values(node_call&)>;

/// Checks a node's params beyond what param_spec can say (a layer list, a dataset's own params).
/// Receives the node with defaults applied.
using node_check = std::function<std::vector<graph_error>(const graph_node&)>;

/// A node type: what it is called, what it takes and gives, and how it runs.
struct node_spec {
  std::string type;
  std::string help;
  std::vector<param_spec> params;
  std::vector<port_spec> inputs;
  std::vector<port_spec> outputs;
  node_check check;
  /// Empty for the built-in types, whose runs live with libtorch (nodes::builtin_run); the engine
  /// runs this when it is set.
  node_fn run;

  [[nodiscard]] const param_spec* param(const std::string& name) const;
  [[nodiscard]] const port_spec* input(const std::string& name) const;
  [[nodiscard]] const port_spec* output(const std::string& name) const;
};

/// Every node type a run can use, by type name.
class node_registry {
public:
  void add(node_spec spec);
  [[nodiscard]] const node_spec* find(const std::string& type) const;
  [[nodiscard]] const std::map<std::string, node_spec>& all() const { return specs_; }

private:
  std::map<std::string, node_spec> specs_;
};

/// The registry of built-in nodes (datasets, loaders, models, losses, optimizers, the loop, ...):
/// their specs, torch-free; what they run is nodes::builtin_run's.
[[nodiscard]] const node_registry& builtin_registry();

} // namespace cdui::runtime
