// Model node: a stack of layers whose input shape comes from the dataset it is wired to.
#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "runtime/layer_shapes.hpp"
#include "runtime/node_call.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/nodes/lora.hpp"
#include "runtime/nodes/layers.hpp"
#include "runtime/nodes/values.hpp"
#include "runtime/trainable.hpp"

namespace cdui::runtime::nodes {

c10::Device torch_device(const std::string& name) {
  if (name.rfind("cuda", 0) == 0 || name.rfind("mps", 0) == 0)
    return c10::Device{name};
  return c10::Device{c10::kCPU};
}

namespace {

/// PyTorch's default initialisation of Linear and Conv2d (kaiming_uniform with a = sqrt(5), i.e.
/// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias), drawn from the run's generator.
void init_from(torch::nn::Module& m, std::int64_t fan_in, at::Generator& gen) {
  torch::NoGradGuard no_grad;
  auto bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  for (auto& p : m.parameters(false))
    p.uniform_(-bound, bound, gen);
}

/// Builds the layer a plan describes (layer_shapes.hpp has the shape rules).
torch::nn::AnyModule make_layer(const layer_plan& plan, at::Generator& gen) {
  namespace nn = torch::nn;
  const auto& type = plan.type;
  const auto& in = plan.in;
  if (type == "Linear") {
    auto m = nn::Linear(nn::LinearOptions(in.back(), plan.out_features).bias(plan.bias));
    init_from(*m, in.back(), gen);
    return nn::AnyModule(m);
  }
  if (type == "Conv2d") {
    auto m = nn::Conv2d(nn::Conv2dOptions(in[0], plan.out_features, plan.kernel)
                          .stride(plan.stride)
                          .padding(plan.padding)
                          .bias(plan.bias));
    init_from(*m, in[0] * plan.kernel * plan.kernel, gen);
    return nn::AnyModule(m);
  }
  if (type == "MaxPool2d")
    return nn::AnyModule(std::make_shared<max_pool_impl>(plan.kernel, plan.stride));
  if (type == "Flatten")
    return nn::AnyModule(nn::Flatten());
  if (type == "ReLU")
    return nn::AnyModule(nn::ReLU());
  if (type == "GELU")
    return nn::AnyModule(nn::GELU());
  if (type == "Tanh")
    return nn::AnyModule(nn::Tanh());
  if (type == "Dropout")
    return nn::AnyModule(std::make_shared<dropout_impl>(plan.p, gen));
  if (type == "BatchNorm1d")
    return nn::AnyModule(nn::BatchNorm1d(in[0]));
  if (type == "BatchNorm2d")
    return nn::AnyModule(std::make_shared<batch_norm2d_impl>(in[0]));
  return nn::AnyModule(std::make_shared<layer_norm_impl>(nn::LayerNormOptions({in.back()})));
}

/// Puts adapters on the layers `lora` names (after every layer is built, so the base weights are
/// those of the same Model without `lora`) and freezes what `freeze` names and the adapted layers'
/// own weights.
void adapt_and_freeze(node_call& call, const nlohmann::json& layers, std::vector<torch::nn::AnyModule>& built) {
  const auto& freeze = call.param("freeze");
  auto lora = read_lora(call.param("lora"), layers);
  for (std::size_t i = 0; i < built.size(); ++i) {
    auto name = layer_name(layers[i]["type"].get<std::string>(), i);
    if (lora.adapts(name)) {
      auto linear = built[i].get<torch::nn::Linear>();
      built[i] = torch::nn::AnyModule(std::make_shared<lora_linear_impl>(
        linear->weight, linear->bias, lora.rank, lora.scale(), call.rng()));
      continue;
    }
    for (auto& p : built[i].ptr()->named_parameters(false))
      if (frozen_by(freeze, name + "." + p.key()))
        p.value().requires_grad_(false);
  }
}

port_values run_model(node_call& call) {
  std::vector<std::int64_t> shape;
  for (const auto& d : call.param("input_shape"))
    shape.push_back(d.get<std::int64_t>());
  if (call.has_input("dataset")) {
    auto dataset_shape = call.input<dataset_value>("dataset")->sample_shape;
    if (!shape.empty() && shape != dataset_shape)
      throw node_error("param 'input_shape' " + shape_text(shape) + " differs from the dataset's "
                       + shape_text(dataset_shape));
    shape = dataset_shape;
  }
  if (shape.empty())
    throw node_error("the input shape is unknown: connect a Dataset to the 'dataset' input or "
                     "set param 'input_shape'");
  auto model = std::make_shared<model_value>();
  model->input_shape = shape;
  const auto& layers = call.param("layers");
  torch::NoGradGuard no_grad;
  std::vector<torch::nn::AnyModule> built;
  std::vector<layer_plan> plans;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto type = layers[i]["type"].get<std::string>();
    auto where = "layer " + std::to_string(i + 1) + " (" + type + ")";
    auto planned = plan_layer(layers[i], shape, where);
    if (auto* error = std::get_if<std::string>(&planned))
      throw node_error(*error);
    const auto& plan = std::get<layer_plan>(planned);
    auto layer = make_layer(plan, call.rng());
    // One forward pass on two zero samples holds the module to the shape rules the estimate counts
    // with (a disagreement is a bug here, not the user's), and catches what the rules do not.
    std::vector<std::int64_t> probe{2};
    probe.insert(probe.end(), shape.begin(), shape.end());
    at::Tensor out;
    try {
      layer.ptr()->eval();
      out = layer.forward(torch::zeros(probe));
    } catch (const std::exception& e) {
      auto text = std::string{e.what()};
      if (const auto* c10 = dynamic_cast<const c10::Error*>(&e))
        text = c10->what_without_backtrace();
      throw node_error(where + " cannot take an input of shape " + shape_text(shape) + ": "
                       + text.substr(0, text.find('\n')));
    }
    shape.assign(out.sizes().begin() + 1, out.sizes().end());
    if (shape != plan.out)
      throw node_error(where + " gives " + shape_text(shape) + " but the shape rules "
                       "(runtime/layer_shapes.cpp) say " + shape_text(plan.out)
                       + "; this is a bug in cdui");
    model->macs_per_sample += macs_per_output(plan) * elements(plan.out);
    if (model->single_value_norm.empty() && type.rfind("BatchNorm", 0) == 0 && elements(plan.in) == plan.in[0])
      model->single_value_norm = layer_name(type, i);
    built.push_back(std::move(layer));
    plans.push_back(plan);
  }
  adapt_and_freeze(call, layers, built);
  for (std::size_t i = 0; i < built.size(); ++i)
    model->module->push_back(layer_name(layers[i]["type"].get<std::string>(), i), std::move(built[i]));
  model->module->train();
  model->output_shape = shape;
  if (call.param("checkpoint_activations").get<bool>())
    model->checkpoint_segments = checkpoint_plan(
      layers, plans,
      call.param("checkpoint_granularity") == "full" ? recompute_granularity::full : recompute_granularity::selective);
  if (std::any_of(layers.begin(), layers.end(), [](const auto& l) { return l["type"] == "Dropout"; }))
    model->dropout_rng = call.rng();
  for (const auto& p : model->module->parameters()) {
    model->parameter_count += p.numel();
    model->trainable_count += p.requires_grad() ? p.numel() : 0;
  }
  call.final_metrics = parameter_figures(*model);
  auto config = parameter_figures(*model);
  config["input_shape"] = model->input_shape;
  config["output_shape"] = model->output_shape;
  call.emit("node_config", config);
  return {{"model", make_value(std::move(model))}};
}

} // namespace

nlohmann::json parameter_figures(const model_value& model) {
  auto share = model.parameter_count > 0
                 ? static_cast<double>(model.trainable_count) / static_cast<double>(model.parameter_count)
                 : 0.0;
  return {{"parameters", model.parameter_count},
          {"trainable_parameters", model.trainable_count},
          {"trainable_share", share}};
}

void bind_model_node_runs(node_runs& runs) {
  runs["Model"] = run_model;
}

} // namespace cdui::runtime::nodes
