// The Model node spec: params, ports and checks, torch-free (runtime/nodes/model.cpp runs it).
#include <algorithm>
#include <cmath>

#include "runtime/layer_shapes.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/trainable.hpp"

namespace cdui::runtime::nodes {

namespace {

std::vector<graph_error> check_model(const graph_node& node) {
  std::vector<graph_error> errors;
  for (auto& message : check_layers(node.id, node.params["layers"]))
    errors.push_back({node.id, "layers", std::move(message)});
  const auto& shape = node.params["input_shape"];
  if (std::any_of(shape.begin(), shape.end(),
                  [](const auto& d) { return !d.is_number_integer() || d.template get<std::int64_t>() < 1; }))
    errors.push_back({node.id, "input_shape", "node '" + node.id
                                                + "' (Model): param 'input_shape' must list "
                                                  "positive integers, got " + shape.dump()});
  if (!errors.empty())
    return errors;
  for (auto& message : check_trainable(node.id, node.params["layers"], node.params["freeze"], node.params["lora"]))
    errors.push_back({node.id, message.find("'lora'") != std::string::npos ? "lora" : "freeze", std::move(message)});
  return errors;
}

} // namespace

void register_model_node(node_registry& registry) {
  node_spec spec;
  spec.type = "Model";
  spec.help = "A stack of layers. Each layer's input size is inferred from the one before it.";
  spec.params = {
    {"layers", param_kind::list, nlohmann::json{}, -INFINITY, INFINITY, {},
     "layers in order, e.g. {\"type\": \"Linear\", \"out_features\": 10}"},
    {"input_shape", param_kind::list, nlohmann::json::array(), -INFINITY, INFINITY, {},
     "the shape of one sample, when no dataset is connected"},
    {"freeze", param_kind::list, nlohmann::json::array(), -INFINITY, INFINITY, {},
     "layers or parameters that do not train: \"Linear1\", \"Linear1.bias\", or a prefix ending in '*'"},
    {"lora", param_kind::object, nlohmann::json::object(), -INFINITY, INFINITY, {},
     "low-rank adapters on Linear layers, whose own weights freeze: {\"rank\": 8, \"alpha\": 8, "
     "\"layers\": [\"Linear1\"]} (layers: every Linear when left out; {}: none)"},
    {"checkpoint_activations", param_kind::boolean, false, -INFINITY, INFINITY, {},
     "keep only each block's input (a Linear or Conv2d and the layers up to the next) while "
     "training, and recompute the block in the backward pass: less memory, a longer step"},
    {"checkpoint_granularity", param_kind::choice, "selective", -INFINITY, INFINITY, {"selective", "full"},
     "with checkpoint_activations: selective keeps the output of a block's Linear or Conv2d when it "
     "costs 64 or more multiply-adds an element, and recomputes the layers after it; full recomputes "
     "each whole block: less memory, more time"},
  };
  spec.inputs = {{"dataset", port_type::dataset, true, "gives the input shape", "input_shape"}};
  spec.outputs = {{"model", port_type::model, true, ""}};
  spec.check = check_model;
  registry.add(std::move(spec));
}

} // namespace cdui::runtime::nodes
