#include "runtime/trainable.hpp"

#include <algorithm>

namespace cdui::runtime {

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "none" : out;
}

/// Every base parameter of the layer list, as "<layer>.<name>", and the layers that have any.
struct base_names {
  std::vector<std::string> parameters;
  std::vector<std::string> layers;
};

base_names base_names_of(const nlohmann::json& layers) {
  base_names names;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto type = layers[i]["type"].get<std::string>();
    auto layer = layer_name(type, i);
    auto own = parameter_names(type, layers[i].value("bias", true));
    if (!own.empty())
      names.layers.push_back(layer);
    for (const auto& p : own)
      names.parameters.push_back(layer + "." + p);
  }
  return names;
}

bool matches(const std::string& entry, const std::string& name) {
  if (!entry.empty() && entry.back() == '*')
    return name.compare(0, entry.size() - 1, entry, 0, entry.size() - 1) == 0;
  return name == entry || (name.size() > entry.size() && name.compare(0, entry.size(), entry) == 0
                           && name[entry.size()] == '.');
}

std::vector<std::string> check_lora(const std::string& who, const nlohmann::json& layers,
                                    const nlohmann::json& lora) {
  std::vector<std::string> errors;
  if (lora.empty())
    return errors;
  for (const auto& [key, unused] : lora.items())
    if (key != "rank" && key != "alpha" && key != "layers")
      errors.push_back(who + "unknown field \"" + key + "\" (lora takes rank, alpha and layers)");
  if (!lora.contains("rank"))
    errors.push_back(who + "'rank' is missing: give the adapters' rank, an integer >= 1 (e.g. 8)");
  else if (!lora["rank"].is_number_integer() || lora["rank"].get<std::int64_t>() < 1)
    errors.push_back(who + "'rank' must be an integer >= 1, got " + lora["rank"].dump());
  if (lora.contains("alpha") && (!lora["alpha"].is_number() || !(lora["alpha"].get<double>() > 0)))
    errors.push_back(who + "'alpha' must be a number > 0, got " + lora["alpha"].dump());
  std::vector<std::string> linear;
  for (std::size_t i = 0; i < layers.size(); ++i)
    if (layers[i]["type"] == "Linear")
      linear.push_back(layer_name("Linear", i));
  if (!lora.contains("layers")) {
    if (linear.empty())
      errors.push_back(who + "the model has no Linear layer to adapt");
    return errors;
  }
  const auto& named = lora["layers"];
  if (!named.is_array() || named.empty()) {
    errors.push_back(who + "'layers' must list the Linear layers to adapt (" + join(linear) + "), got "
                     + named.dump());
    return errors;
  }
  for (const auto& entry : named) {
    if (!entry.is_string()) {
      errors.push_back(who + "'layers' takes layer names (" + join(linear) + "), got " + entry.dump());
      continue;
    }
    auto name = entry.get<std::string>();
    if (std::find(linear.begin(), linear.end(), name) != linear.end())
      continue;
    std::string type;
    for (std::size_t i = 0; i < layers.size(); ++i)
      if (layer_name(layers[i]["type"].get<std::string>(), i) == name)
        type = layers[i]["type"].get<std::string>();
    errors.push_back(who + "layer '" + name + "' " + (type.empty() ? "is not in the model" : "is " + type)
                     + "; LoRA adapts Linear layers (this model's: " + join(linear) + ")");
  }
  return errors;
}

} // namespace

bool lora_settings::adapts(const std::string& layer) const {
  return on() && std::find(layers.begin(), layers.end(), layer) != layers.end();
}

std::string layer_name(const std::string& type, std::size_t index) {
  return type + std::to_string(index + 1);
}

std::vector<std::string> parameter_names(const std::string& type, bool bias) {
  if (type == "Linear" || type == "Conv2d")
    return bias ? std::vector<std::string>{"weight", "bias"} : std::vector<std::string>{"weight"};
  if (type == "BatchNorm1d" || type == "BatchNorm2d" || type == "LayerNorm")
    return {"weight", "bias"};
  return {};
}

lora_settings read_lora(const nlohmann::json& lora, const nlohmann::json& layers) {
  lora_settings s;
  if (!lora.is_object() || !lora.contains("rank"))
    return s;
  s.rank = lora["rank"].get<std::int64_t>();
  s.alpha = lora.value("alpha", lora_settings::default_alpha);
  if (lora.contains("layers")) {
    for (const auto& name : lora["layers"])
      s.layers.push_back(name.get<std::string>());
  } else {
    for (std::size_t i = 0; i < layers.size(); ++i)
      if (layers[i]["type"] == "Linear")
        s.layers.push_back(layer_name("Linear", i));
  }
  return s;
}

bool frozen_by(const nlohmann::json& freeze, const std::string& name) {
  return std::any_of(freeze.begin(), freeze.end(),
                     [&](const nlohmann::json& entry) { return matches(entry.get<std::string>(), name); });
}

bool base_trains(const nlohmann::json& freeze, const lora_settings& lora, const std::string& layer,
                 const std::string& name) {
  return !lora.adapts(layer) && !frozen_by(freeze, layer + "." + name);
}

std::vector<std::string> check_trainable(const std::string& node_id, const nlohmann::json& layers,
                                         const nlohmann::json& freeze, const nlohmann::json& lora) {
  auto who = [&](const char* param) { return "node '" + node_id + "' (Model): param '" + param + "': "; };
  auto errors = check_lora(who("lora"), layers, lora);
  auto names = base_names_of(layers);
  bool entries_ok = true;
  for (const auto& entry : freeze) {
    if (!entry.is_string() || entry.get<std::string>().empty() || entry == "*") {
      errors.push_back(who("freeze") + "takes layer names, parameter names or prefixes ending in '*', got "
                       + entry.dump());
      entries_ok = false;
      continue;
    }
    auto text = entry.get<std::string>();
    if (std::none_of(names.parameters.begin(), names.parameters.end(),
                     [&](const std::string& p) { return matches(text, p); })) {
      errors.push_back(who("freeze") + "'" + text + "' names no layer or parameter of this model (its layers "
                       "with parameters: " + join(names.layers) + ")");
      entries_ok = false;
    }
  }
  if (!entries_ok || !errors.empty() || read_lora(lora, layers).on() || names.parameters.empty())
    return errors;
  if (std::all_of(names.parameters.begin(), names.parameters.end(),
                  [&](const std::string& p) { return frozen_by(freeze, p); }))
    errors.push_back(who("freeze") + "freezes every parameter of the model, so nothing would train");
  return errors;
}

parameter_counts count_parameters(const std::vector<layer_plan>& layers, const nlohmann::json& freeze,
                                  const lora_settings& lora) {
  parameter_counts c;
  auto add = [&](std::int64_t n, bool trains) {
    c.all += n;
    if (trains) {
      c.trainable += n;
      c.largest_trainable = std::max(c.largest_trainable, n);
    }
  };
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    auto layer = layer_name(l.type, i);
    bool weighted = l.type == "Linear" || l.type == "Conv2d";
    auto bias = weighted ? (l.bias ? l.out_features : 0) : l.parameters / 2;
    for (const auto& name : parameter_names(l.type, weighted ? l.bias : true))
      add(name == "bias" ? bias : l.parameters - bias, base_trains(freeze, lora, layer, name));
    if (lora.adapts(layer)) {
      add(lora.rank * l.in.back(), true);     // A: [rank, in_features]
      add(l.out_features * lora.rank, true);  // B: [out_features, rank]
    }
  }
  return c;
}

} // namespace cdui::runtime
