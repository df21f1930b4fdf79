#include "runtime/layer_shapes.hpp"

#include <algorithm>

namespace cdui::runtime {

namespace {

/// a * b, or -1 when it passes max_elements (both non-negative).
std::int64_t product(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || r > max_elements)
    return -1;
  return r;
}

std::int64_t field(const nlohmann::json& l, const char* name, std::int64_t fallback) {
  return l.contains(name) ? l[name].get<std::int64_t>() : fallback;
}

std::string layer_where(const std::string& node_id, std::size_t i, const std::string& type) {
  return "node '" + node_id + "' (Model), layer " + std::to_string(i + 1)
         + (type.empty() ? "" : " (" + type + ")");
}

/// The shape after a square window of `k` with `stride` over `padding`-padded input, with
/// `channels` channels; an error sentence when the window is larger than the padded input.
std::variant<sample_shape, std::string> window_output(const sample_shape& in, std::int64_t channels,
                                                      const layer_plan& plan, const std::string& where,
                                                      const char* what) {
  auto k = plan.kernel;
  auto h = in[1] + 2 * plan.padding, w = in[2] + 2 * plan.padding;
  if (h < k || w < k)
    return where + " cannot take an input of shape " + shape_text(in) + ": its " + what + " ("
           + std::to_string(k) + "x" + std::to_string(k) + ") is larger than the "
           + (plan.padding > 0 ? "padded " : "") + "input (" + std::to_string(h) + "x"
           + std::to_string(w) + ")";
  return sample_shape{channels, (h - k) / plan.stride + 1, (w - k) / plan.stride + 1};
}

/// A Linear's or Conv2d's parameters from its weight count (-1: past max_elements), all of which
/// autocast casts; false when the weights or the output are too large to count.
bool count_weights(layer_plan& plan, std::int64_t weights) {
  if (weights < 0 || elements(plan.out) < 0)
    return false;
  plan.parameters = plan.cast_parameters = weights + (plan.bias ? plan.out_features : 0);
  return true;
}

} // namespace

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

std::string shape_text(const sample_shape& sample) {
  std::string text = "[N";
  for (auto d : sample)
    text += ", " + std::to_string(d);
  return text + "]";
}

std::int64_t elements(const sample_shape& sample) {
  std::int64_t n = 1;
  for (auto d : sample)
    n = n < 0 ? -1 : product(n, d);
  return n;
}

std::variant<layer_plan, std::string> plan_layer(const nlohmann::json& l, const sample_shape& in,
                                                 const std::string& where) {
  layer_plan plan;
  plan.type = l["type"].get<std::string>();
  plan.in = in;
  plan.out = in;
  plan.bias = l.value("bias", true);
  const auto& type = plan.type;
  auto too_large = [&] {
    return where + " is too large: more than 2^40 values in a sample or 2^40 parameters (input "
           + shape_text(in) + ")";
  };
  if (elements(in) < 0)
    return too_large();
  if (type == "Linear") {
    auto features = in.empty() ? 0 : in.back();
    if (l.contains("in_features") && l["in_features"].get<std::int64_t>() != features)
      return where + " declares in_features " + l["in_features"].dump() + " but receives "
             + shape_text(in);
    if (in.size() != 1)
      return where + " receives " + shape_text(in)
             + "; a Linear layer here needs [N, features]: add a Flatten layer before it";
    plan.out_features = l["out_features"].get<std::int64_t>();
    plan.out = {plan.out_features};
    if (plan.out_features > max_elements || !count_weights(plan, product(features, plan.out_features)))
      return too_large();
    return plan;
  }
  if (type == "Conv2d") {
    if (in.size() != 3)
      return where + " receives " + shape_text(in) + "; Conv2d needs [N, channels, height, width]";
    if (l.contains("in_channels") && l["in_channels"].get<std::int64_t>() != in[0])
      return where + " declares in_channels " + l["in_channels"].dump() + " but receives "
             + shape_text(in);
    plan.out_features = l["out_channels"].get<std::int64_t>();
    plan.kernel = l["kernel_size"].get<std::int64_t>();
    plan.stride = field(l, "stride", 1);
    plan.padding = field(l, "padding", 0);
    if (plan.kernel > max_elements || plan.padding > max_elements || plan.out_features > max_elements)
      return too_large();
    auto out = window_output(in, plan.out_features, plan, where, "kernel");
    if (auto* error = std::get_if<std::string>(&out))
      return *error;
    plan.out = std::get<sample_shape>(out);
    if (!count_weights(plan, product(product(in[0], plan.out_features), product(plan.kernel, plan.kernel))))
      return too_large();
    return plan;
  }
  if (type == "MaxPool2d") {
    if (in.size() != 3)
      return where + " receives " + shape_text(in) + "; MaxPool2d needs [N, channels, height, width]";
    plan.kernel = l["kernel_size"].get<std::int64_t>();
    plan.stride = field(l, "stride", plan.kernel);
    auto out = window_output(in, in[0], plan, where, "window");
    if (auto* error = std::get_if<std::string>(&out))
      return *error;
    plan.out = std::get<sample_shape>(out);
    return plan;
  }
  if (type == "Flatten") {
    plan.out = {elements(in)};
    return plan;
  }
  if (type == "Dropout") {
    plan.p = l.value("p", 0.5);
    return plan;
  }
  if (type == "ReLU" || type == "GELU" || type == "Tanh")
    return plan;
  if (type == "BatchNorm1d" || type == "BatchNorm2d") {
    bool two_d = type == "BatchNorm2d";
    if (two_d ? in.size() != 3 : (in.size() != 1 && in.size() != 2))
      return where + " receives " + shape_text(in)
             + (two_d ? "; BatchNorm2d needs [N, channels, height, width]"
                      : "; BatchNorm1d needs [N, features] or [N, channels, length]");
    plan.parameters = 2 * in[0];
    plan.buffer_floats = 2 * in[0];
    plan.buffer_int64s = 1;
    return plan;
  }
  // LayerNorm over the last dimension.
  if (in.empty())
    return where + " receives a scalar per sample; LayerNorm needs a feature dimension";
  plan.parameters = 2 * in.back();
  return plan;
}

std::variant<std::vector<layer_plan>, std::string> plan_layers(const nlohmann::json& layers,
                                                               const sample_shape& input) {
  std::vector<layer_plan> plans;
  auto shape = input;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto where = "layer " + std::to_string(i + 1) + " (" + layers[i]["type"].get<std::string>() + ")";
    auto planned = plan_layer(layers[i], shape, where);
    if (auto* error = std::get_if<std::string>(&planned))
      return *error;
    plans.push_back(std::move(std::get<layer_plan>(planned)));
    shape = plans.back().out;
  }
  return plans;
}

std::vector<std::string> check_layers(const std::string& node_id, const nlohmann::json& layers) {
  std::vector<std::string> errors;
  if (layers.empty())
    errors.push_back("node '" + node_id + "' (Model): param 'layers' is empty; a model needs a layer");
  if (layers.size() > max_model_layers) {
    errors.push_back("node '" + node_id + "' (Model): param 'layers' has " + std::to_string(layers.size())
                     + " layers; a Model takes at most " + std::to_string(max_model_layers));
    return errors;  // nothing of such a list is checked: that alone took seconds of a request
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    if (!l.is_object() || !l.contains("type") || !l["type"].is_string()) {
      errors.push_back(layer_where(node_id, i, "") + ": must be an object with a \"type\"");
      continue;
    }
    auto type = l["type"].get<std::string>();
    auto known = layer_fields().find(type);
    if (known == layer_fields().end()) {
      std::string names;
      for (const auto& [n, unused] : layer_fields())
        names += (names.empty() ? "" : ", ") + n;
      errors.push_back(layer_where(node_id, i, "") + ": unknown layer type '" + type
                       + "' (known: " + names + ")");
      continue;
    }
    for (const auto& [name, v] : l.items()) {
      if (name == "type")
        continue;
      auto where = layer_where(node_id, i, type);
      if (known->second.find(name) == known->second.end()) {
        errors.push_back(where + ": unknown field '" + name + "'");
      } else if (name == "bias") {
        if (!v.is_boolean())
          errors.push_back(where + ": 'bias' must be true or false");
      } else if (name == "p") {
        if (!v.is_number() || v.get<double>() < 0 || v.get<double>() >= 1)
          errors.push_back(where + ": 'p' must be a number in [0, 1), got " + v.dump());
      } else if (!v.is_number_integer() || v.get<std::int64_t>() < (name == "padding" ? 0 : 1)) {
        errors.push_back(where + ": '" + name + "' must be an integer >= "
                         + (name == "padding" ? "0" : "1") + ", got " + v.dump());
      }
    }
    for (const auto& [name, required] : known->second)
      if (required && !l.contains(name))
        errors.push_back(layer_where(node_id, i, type) + ": missing '" + name + "'");
  }
  return errors;
}

bool keeps_inner_activations(const nlohmann::json& layers, std::size_t begin, std::size_t end) {
  auto passes = [&](std::size_t i) {  // keeps nothing and gives its input on (a view, at most)
    auto type = layers[i].value("type", "");
    return type == "Flatten" || (type == "Dropout" && layers[i].value("p", 0.5) == 0.0);
  };
  auto only_passing = [&](std::size_t from, std::size_t to) {
    for (auto i = from; i < to; ++i)
      if (!passes(i))
        return false;
    return true;
  };
  for (auto i = begin; i < end; ++i) {
    auto type = layers[i].value("type", "");
    if (passes(i))
      continue;
    if ((type == "Linear" || type == "Conv2d") && only_passing(begin, i))
      continue;  // it keeps the block's input
    if ((type == "ReLU" || type == "Tanh") && only_passing(i + 1, end))
      continue;  // it keeps the block's output
    return true;
  }
  return false;
}

std::vector<std::size_t> block_starts(const nlohmann::json& layers) {
  std::vector<std::size_t> starts{0};
  bool weighted = false;  // has the block that starts at starts.back() a Linear or Conv2d yet
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto type = layers[i].value("type", "");
    if (type != "Linear" && type != "Conv2d")
      continue;
    if (weighted)
      starts.push_back(i);
    weighted = true;
  }
  return starts;
}

std::int64_t macs_per_output(const layer_plan& plan) {
  if (plan.type == "Linear")
    return plan.in.empty() ? 0 : plan.in.back();
  if (plan.type == "Conv2d")
    return plan.in.empty() ? 0 : plan.in.front() * plan.kernel * plan.kernel;
  return 0;
}

std::vector<forward_segment> checkpoint_plan(const nlohmann::json& layers, const std::vector<layer_plan>& plans,
                                             recompute_granularity how) {
  std::vector<forward_segment> segments;
  auto add = [&](std::size_t begin, std::size_t end, bool checkpointed) {
    if (begin == end)
      return;
    if (!checkpointed && !segments.empty() && !segments.back().checkpointed)
      segments.back().end = end;  // one stretch of plain layers
    else
      segments.push_back({begin, end, checkpointed});
  };
  auto starts = block_starts(layers);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    auto begin = starts[k];
    auto end = k + 1 < starts.size() ? starts[k + 1] : layers.size();
    if (k + 1 == starts.size()) {
      add(begin, end, false);
      continue;
    }
    auto weighted = begin;
    while (weighted < end && macs_per_output(plans[weighted]) == 0)
      ++weighted;
    if (how == recompute_granularity::selective && weighted < end
        && macs_per_output(plans[weighted]) >= selective_keep_macs) {
      add(begin, weighted + 1, false);
      add(weighted + 1, end, keeps_inner_activations(layers, weighted + 1, end));
      continue;
    }
    add(begin, end, keeps_inner_activations(layers, begin, end));
  }
  return segments;
}

} // namespace cdui::runtime
