// Model node: a stack of layers whose input shape comes from the dataset it is wired to.
#include <cmath>
#include <map>
#include <set>

#include <torch/torch.h>

#include "runtime/node_call.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/nodes/values.hpp"

namespace cdui::runtime::nodes {

c10::Device torch_device(const std::string& name) {
  if (name.rfind("cuda", 0) == 0 || name.rfind("mps", 0) == 0)
    return c10::Device{name};
  return c10::Device{c10::kCPU};
}

namespace {

/// The fields each layer type takes: name -> required.
const std::map<std::string, std::map<std::string, bool>>& layer_fields() {
  static const std::map<std::string, std::map<std::string, bool>> fields{
    {"Linear", {{"out_features", true}, {"in_features", false}, {"bias", false}}},
    {"Conv2d",
     {{"out_channels", true}, {"kernel_size", true}, {"stride", false}, {"padding", false},
      {"in_channels", false}, {"bias", false}}},
    {"MaxPool2d", {{"kernel_size", true}, {"stride", false}}},
    {"Flatten", {}},
    {"ReLU", {}},
    {"GELU", {}},
    {"Tanh", {}},
    {"Dropout", {{"p", false}}},
    {"BatchNorm1d", {}},
    {"BatchNorm2d", {}},
    {"LayerNorm", {}},
  };
  return fields;
}

std::string layer_where(const graph_node& node, std::size_t i, const std::string& type) {
  return "node '" + node.id + "' (Model), layer " + std::to_string(i + 1)
         + (type.empty() ? "" : " (" + type + ")");
}

std::vector<graph_error> check_model(const graph_node& node) {
  std::vector<graph_error> errors;
  auto fail = [&](std::string message) { errors.push_back({node.id, "layers", std::move(message)}); };
  const auto& layers = node.params["layers"];
  if (layers.empty())
    fail("node '" + node.id + "' (Model): param 'layers' is empty; a model needs a layer");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    if (!l.is_object() || !l.contains("type") || !l["type"].is_string()) {
      fail(layer_where(node, i, "") + ": must be an object with a \"type\"");
      continue;
    }
    auto type = l["type"].get<std::string>();
    auto known = layer_fields().find(type);
    if (known == layer_fields().end()) {
      std::string names;
      for (const auto& [n, unused] : layer_fields())
        names += (names.empty() ? "" : ", ") + n;
      fail(layer_where(node, i, "") + ": unknown layer type '" + type + "' (known: " + names + ")");
      continue;
    }
    for (const auto& [field, v] : l.items()) {
      if (field == "type")
        continue;
      auto f = known->second.find(field);
      if (f == known->second.end()) {
        fail(layer_where(node, i, type) + ": unknown field '" + field + "'");
      } else if (field == "bias") {
        if (!v.is_boolean())
          fail(layer_where(node, i, type) + ": 'bias' must be true or false");
      } else if (field == "p") {
        if (!v.is_number() || v.get<double>() < 0 || v.get<double>() >= 1)
          fail(layer_where(node, i, type) + ": 'p' must be a number in [0, 1), got " + v.dump());
      } else if (!v.is_number_integer() || v.get<std::int64_t>() < (field == "padding" ? 0 : 1)) {
        fail(layer_where(node, i, type) + ": '" + field + "' must be an integer >= "
             + (field == "padding" ? "0" : "1") + ", got " + v.dump());
      }
    }
    for (const auto& [field, required] : known->second)
      if (required && !l.contains(field))
        fail(layer_where(node, i, type) + ": missing '" + field + "'");
  }
  const auto& shape = node.params["input_shape"];
  if (std::any_of(shape.begin(), shape.end(),
                  [](const auto& d) { return !d.is_number_integer() || d.template get<std::int64_t>() < 1; }))
    errors.push_back({node.id, "input_shape", "node '" + node.id
                                                + "' (Model): param 'input_shape' must list "
                                                  "positive integers, got " + shape.dump()});
  return errors;
}

/// Dropout that draws its masks from the run's generator, so concurrent runs in one process stay
/// reproducible (torch::nn::Dropout uses the process-wide generator).
class run_dropout_impl : public torch::nn::Module {
public:
  run_dropout_impl(double p, at::Generator gen) : p_(p), gen_(std::move(gen)) {}

  at::Tensor forward(const at::Tensor& x) {
    if (!is_training() || p_ == 0.0)
      return x;
    auto keep = at::empty_like(x).bernoulli_(1.0 - p_, gen_);
    return x * keep / (1.0 - p_);
  }

private:
  double p_;
  at::Generator gen_;
};

std::string shape_text(const std::vector<std::int64_t>& sample) {
  std::string text = "[N";
  for (auto d : sample)
    text += ", " + std::to_string(d);
  return text + "]";
}

/// PyTorch's default initialisation of Linear and Conv2d (kaiming_uniform with a = sqrt(5), i.e.
/// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias), drawn from the run's generator.
void init_from(torch::nn::Module& m, std::int64_t fan_in, at::Generator& gen) {
  torch::NoGradGuard no_grad;
  auto bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  for (auto& p : m.parameters(false))
    p.uniform_(-bound, bound, gen);
}

/// Builds one layer for an input of shape `in` (without batch); throws node_error naming the layer.
torch::nn::AnyModule make_layer(const nlohmann::json& l, const std::vector<std::int64_t>& in,
                                at::Generator& gen, const std::string& where) {
  namespace nn = torch::nn;
  auto type = l["type"].get<std::string>();
  auto get = [&](const char* field, std::int64_t fallback) {
    return l.contains(field) ? l[field].get<std::int64_t>() : fallback;
  };
  auto bias = l.value("bias", true);
  if (type == "Linear") {
    auto features = in.empty() ? 0 : in.back();
    if (l.contains("in_features") && l["in_features"].get<std::int64_t>() != features)
      throw node_error(where + " declares in_features " + l["in_features"].dump()
                       + " but receives " + shape_text(in));
    if (in.size() != 1)
      throw node_error(where + " receives " + shape_text(in)
                       + "; a Linear layer here needs [N, features]: add a Flatten layer before it");
    auto m = nn::Linear(nn::LinearOptions(features, l["out_features"].get<std::int64_t>()).bias(bias));
    init_from(*m, features, gen);
    return nn::AnyModule(m);
  }
  if (type == "Conv2d") {
    if (in.size() != 3)
      throw node_error(where + " receives " + shape_text(in)
                       + "; Conv2d needs [N, channels, height, width]");
    if (l.contains("in_channels") && l["in_channels"].get<std::int64_t>() != in[0])
      throw node_error(where + " declares in_channels " + l["in_channels"].dump()
                       + " but receives " + shape_text(in));
    auto k = l["kernel_size"].get<std::int64_t>();
    auto m = nn::Conv2d(nn::Conv2dOptions(in[0], l["out_channels"].get<std::int64_t>(), k)
                          .stride(get("stride", 1))
                          .padding(get("padding", 0))
                          .bias(bias));
    init_from(*m, in[0] * k * k, gen);
    return nn::AnyModule(m);
  }
  if (type == "MaxPool2d") {
    if (in.size() != 3)
      throw node_error(where + " receives " + shape_text(in)
                       + "; MaxPool2d needs [N, channels, height, width]");
    auto k = l["kernel_size"].get<std::int64_t>();
    return nn::AnyModule(nn::MaxPool2d(nn::MaxPool2dOptions(k).stride(get("stride", k))));
  }
  if (type == "Flatten")
    return nn::AnyModule(nn::Flatten());
  if (type == "ReLU")
    return nn::AnyModule(nn::ReLU());
  if (type == "GELU")
    return nn::AnyModule(nn::GELU());
  if (type == "Tanh")
    return nn::AnyModule(nn::Tanh());
  if (type == "Dropout")
    return nn::AnyModule(std::make_shared<run_dropout_impl>(l.value("p", 0.5), gen));
  if (type == "BatchNorm1d") {
    if (in.size() != 1 && in.size() != 2)
      throw node_error(where + " receives " + shape_text(in) + "; BatchNorm1d needs [N, features]"
                       " or [N, channels, length]");
    return nn::AnyModule(nn::BatchNorm1d(in[0]));
  }
  if (type == "BatchNorm2d") {
    if (in.size() != 3)
      throw node_error(where + " receives " + shape_text(in)
                       + "; BatchNorm2d needs [N, channels, height, width]");
    return nn::AnyModule(nn::BatchNorm2d(in[0]));
  }
  // LayerNorm over the last dimension.
  if (in.empty())
    throw node_error(where + " receives a scalar per sample; LayerNorm needs a feature dimension");
  return nn::AnyModule(nn::LayerNorm(nn::LayerNormOptions({in.back()})));
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
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto type = layers[i]["type"].get<std::string>();
    auto where = "layer " + std::to_string(i + 1) + " (" + type + ")";
    auto layer = make_layer(layers[i], shape, call.rng(), where);
    // One forward pass on two zero samples gives the layer's output shape and catches the shape
    // errors libtorch would raise later, while we still know which layer it is.
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
    model->module->push_back(type + std::to_string(i + 1), std::move(layer));
  }
  model->module->train();
  model->output_shape = shape;
  for (const auto& p : model->module->parameters())
    model->parameter_count += p.numel();
  call.final_metrics = {{"parameters", model->parameter_count}};
  call.emit("node_config", {{"input_shape", model->input_shape},
                            {"output_shape", model->output_shape},
                            {"parameters", model->parameter_count}});
  return {{"model", make_value(std::move(model))}};
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
  };
  spec.inputs = {{"dataset", port_type::dataset, false, "gives the input shape"}};
  spec.outputs = {{"model", port_type::model, true, ""}};
  spec.check = check_model;
  spec.run = run_model;
  registry.add(std::move(spec));
}

} // namespace cdui::runtime::nodes
