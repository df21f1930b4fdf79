#pragma once
// Which of a Model's parameters train (docs/graph-format.md, "Freezing and LoRA"), torch-free: the
// Model node's `freeze` and `lora` params read against its layer list. The Model node builds from
// these rules, validation checks with them and the static estimate counts gradients and optimizer
// state with them, so the three cannot drift.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/layer_shapes.hpp"

namespace cdui::runtime {

/// The Model's `lora` param: low-rank adapters on Linear layers (PEFT's LoraConfig: r, lora_alpha,
/// target_modules). Off while `rank` is 0 (the param's default, `{}`).
struct lora_settings {
  /// PEFT's default lora_alpha, used when `alpha` is left out.
  static constexpr double default_alpha = 8.0;

  std::int64_t rank = 0;
  double alpha = default_alpha;
  /// The adapted layers by name ("Linear1"); all the Linear layers when `layers` is left out.
  std::vector<std::string> layers;

  [[nodiscard]] bool on() const { return rank > 0; }
  /// alpha / rank: what B A x is multiplied by.
  [[nodiscard]] double scale() const { return alpha / static_cast<double>(rank); }
  [[nodiscard]] bool adapts(const std::string& layer) const;
};

/// The name of layer `index` (0-based) of type `type` in the built module: "<Type><position>".
[[nodiscard]] std::string layer_name(const std::string& type, std::size_t index);

/// The names of a layer type's own parameters: Linear and Conv2d "weight" (and "bias" unless
/// `bias` is false), the norms "weight" and "bias", the rest none.
[[nodiscard]] std::vector<std::string> parameter_names(const std::string& type, bool bias);

/// Reads a checked `lora` param (see check_trainable) against the model's layers.
[[nodiscard]] lora_settings read_lora(const nlohmann::json& lora, const nlohmann::json& layers);

/// Whether a `freeze` list (checked) freezes the base parameter `name` ("Linear1.weight"): an entry
/// equal to it, a layer name before its dot ("Linear1"), or a prefix ending in '*' ("Linear*",
/// "Conv2d1.*").
[[nodiscard]] bool frozen_by(const nlohmann::json& freeze, const std::string& name);

/// Whether base parameter `name` of layer `layer` trains: not frozen, and not in an adapted layer.
[[nodiscard]] bool base_trains(const nlohmann::json& freeze, const lora_settings& lora,
                               const std::string& layer, const std::string& name);

/// The errors of a Model's `freeze` and `lora` params against its `layers` (already checked by
/// check_layers), each a whole sentence naming the node and the param.
[[nodiscard]] std::vector<std::string> check_trainable(const std::string& node_id, const nlohmann::json& layers,
                                                       const nlohmann::json& freeze, const nlohmann::json& lora);

/// The parameters of a planned model: all of them (adapters included) and those that train, and
/// the largest trainable tensor (the optimizer's temporaries are sized by it).
struct parameter_counts {
  std::int64_t all = 0;
  std::int64_t trainable = 0;
  std::int64_t largest_trainable = 0;
};
[[nodiscard]] parameter_counts count_parameters(const std::vector<layer_plan>& layers,
                                                const nlohmann::json& freeze, const lora_settings& lora);

} // namespace cdui::runtime
