#pragma once
// Training graphs drawn from a seed (issue 32: "a seeded generator, not hand-picked cases"): MLPs
// and CNNs of every layer type of docs/graph-format.md in varied places and sizes (Conv2d strides,
// paddings and kernels, norms and dropout before or after the activations), every precision and
// optimizer, accumulate_steps 1 and more, freeze, LoRA, activation checkpointing at both
// granularities, with and without validation, and their combinations. Every drawn graph is meant
// to validate and train: one that validation accepts and training refuses is a defect of one of
// them. The same seed draws the same graph on every machine (the generator is its own, not the
// standard library's distributions). Used by unit/runtime/drawn_graphs_test.cpp and
// `bench_estimate --generated N`.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testkit/graphs.hpp"

namespace cdui::test {

/// A drawn graph: its seed, a name that says what it combines, and the graph document.
struct drawn_graph {
  std::uint64_t seed = 0;
  std::string name;
  nlohmann::json graph;
  /// What it combines, for tests that select by feature.
  bool cnn = false;
  std::string precision;
  int accumulate = 1;
  bool freeze = false;
  bool lora = false;
  std::string checkpoint;  // "", "selective" or "full"
  bool validation = false;
};

/// splitmix64: small, fast and the same everywhere.
class draw_rng {
public:
  /// The seed goes through the mixer first: consecutive seeds' sequences must not be each other's
  /// shifted by one, as splitmix's states spaced by its increment would be.
  explicit draw_rng(std::uint64_t seed) : state_(mix(seed ^ 0x632BE59BD9B4E019ULL)) {}

  std::uint64_t next() { return mix(state_ += 0x9E3779B97F4A7C15ULL); }
  /// 0 .. n-1.
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  /// lo .. hi, both included.
  int between(int lo, int hi) { return lo + below(hi - lo + 1); }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  template <typename T>
  const T& pick(const std::vector<T>& from) { return from[static_cast<std::size_t>(below(static_cast<int>(from.size())))]; }

private:
  static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  std::uint64_t state_;
};

namespace drawn_detail {

using layer = nlohmann::json;

/// An activation (or none), a norm and a dropout around it, in a drawn order. `norms`: the norm
/// layer types that fit here.
inline void add_activation_block(draw_rng& r, std::vector<layer>& layers, const std::vector<std::string>& norms) {
  std::vector<layer> parts;
  if (r.chance(0.85))
    parts.push_back({{"type", r.pick<std::string>({"ReLU", "GELU", "Tanh"})}});
  if (!norms.empty() && r.chance(0.35))
    parts.insert(r.chance(0.5) ? parts.begin() : parts.end(), layer{{"type", r.pick(norms)}});
  if (r.chance(0.3)) {
    layer dropout{{"type", "Dropout"}};
    auto p = r.pick<double>({0.0, 0.1, 0.25, 0.5});
    if (p != 0.5 || r.chance(0.5))
      dropout["p"] = p;
    parts.insert(r.chance(0.7) ? parts.end() : parts.begin(), dropout);
  }
  layers.insert(layers.end(), parts.begin(), parts.end());
}

inline layer linear(draw_rng& r, int out) {
  layer l{{"type", "Linear"}, {"out_features", out}};
  if (r.chance(0.15))
    l["bias"] = false;
  return l;
}

/// A CNN over 1x28x28 images: 1 to 3 convolution blocks (a Conv2d of drawn channels, kernel,
/// stride and padding; its norm, activation and dropout; a MaxPool2d where the image allows), then
/// Flatten, maybe a hidden Linear block, and the classifier. Channel counts and kernels are those
/// CNNs use: the CPU's convolution library (oneDNN) picks other kernels, with other scratch
/// buffers, for shapes such as 1- or 3-channel hidden layers or even kernels, which the static
/// estimate does not model (docs/training-memory.md).
inline std::vector<layer> cnn_layers(draw_rng& r, int classes) {
  std::vector<layer> layers;
  int size = 28;
  auto blocks = r.between(1, 3);
  for (int b = 0; b < blocks; ++b) {
    // The shapes CNNs use: odd kernels, "same" or no padding, strides of 2 to downsample (not on
    // a 1x1 kernel), channels in multiples of 8.
    auto k = r.pick<int>({1, 3, 3, 5});
    auto stride = k > 1 && r.chance(0.3) ? 2 : 1;
    auto padding = r.chance(0.6) ? k / 2 : 0;
    auto out = (size + 2 * padding - k) / stride + 1;
    if (out < 1)
      break;
    layer conv{{"type", "Conv2d"}, {"out_channels", r.pick<int>({8, 16, 24, 32, 64})}, {"kernel_size", k}};
    if (stride != 1)
      conv["stride"] = stride;
    if (padding != 0)
      conv["padding"] = padding;
    if (r.chance(0.15))
      conv["bias"] = false;
    layers.push_back(conv);
    size = out;
    add_activation_block(r, layers, {"BatchNorm2d", "BatchNorm2d", "LayerNorm"});
    if (size >= 4 && r.chance(0.6)) {
      auto pk = r.pick<int>({2, 2, 3});
      layer pool{{"type", "MaxPool2d"}, {"kernel_size", pk}};
      auto ps = pk;
      if (r.chance(0.25)) {
        ps = r.between(1, pk);
        pool["stride"] = ps;
      }
      layers.push_back(pool);
      size = (size - pk) / ps + 1;
    }
  }
  layers.push_back({{"type", "Flatten"}});
  if (r.chance(0.4)) {
    layers.push_back(linear(r, r.pick<int>({16, 32, 64, 128})));
    add_activation_block(r, layers, {"BatchNorm1d", "LayerNorm"});
  }
  layers.push_back(linear(r, classes));
  return layers;
}

/// An MLP: a Flatten first when the samples are images, 1 to 3 hidden Linear blocks, the output.
inline std::vector<layer> mlp_layers(draw_rng& r, bool images, int outputs) {
  std::vector<layer> layers;
  if (images)
    layers.push_back({{"type", "Flatten"}});
  auto hidden = r.between(1, 3);
  for (int h = 0; h < hidden; ++h) {
    layers.push_back(linear(r, r.pick<int>({8, 16, 32, 64, 128, 256, 512})));
    add_activation_block(r, layers, {"BatchNorm1d", "LayerNorm"});
  }
  layers.push_back(linear(r, outputs));
  return layers;
}

/// The Model's layer names as graph-format.md gives them: <Type><position>.
inline std::string layer_name(const std::vector<layer>& layers, std::size_t i) {
  return layers[i]["type"].get<std::string>() + std::to_string(i + 1);
}

inline bool has_parameters(const layer& l) {
  auto type = l["type"].get<std::string>();
  return type == "Linear" || type == "Conv2d" || type.find("Norm") != std::string::npos;
}

} // namespace drawn_detail

/// The graph of `seed`: Dataset -> DataLoader -> TrainingLoop (2 to 4 optimizer steps on the CPU,
/// one intra-op thread), maybe a validation loader, and a Model drawn as above.
inline drawn_graph draw_graph(std::uint64_t seed) {
  using namespace drawn_detail;
  draw_rng r{seed};
  drawn_graph d;
  d.seed = seed;
  d.cnn = r.chance(0.4);
  // How it batches: the first two optimizer steps take whole windows of whole batches, so the second
  // runs at the full batch with the optimizer's state made (the peak the estimate counts); a
  // remainder leaves the epoch's last batch short.
  auto batch = r.pick<int>({2, 7, 16, 32, 50, 64, 128});
  d.accumulate = r.chance(0.6) ? 1 : r.between(2, 4);
  auto samples = batch * d.accumulate * r.between(2, 3) + r.below(batch);

  // The data: images for a CNN; for an MLP images, moons, blobs or a regression.
  nlohmann::json data, val_data;
  int outputs = 10;
  bool regression = false;
  auto data_word = std::string{"fashion_mnist"};
  if (d.cnn || r.chance(0.3)) {
    data = {{"name", "fashion_mnist"}, {"limit", samples}};
    val_data = {{"name", "fashion_mnist"}, {"split", "test"}, {"limit", r.pick<int>({64, 100, 256})}};
  } else {
    data_word = r.pick<std::string>({"moons", "blobs", "blobs", "regression"});
    data = {{"name", data_word}, {"n_samples", samples}};
    outputs = 2;
    if (data_word != "moons") {
      data["n_features"] = r.between(1, 64);
      if (data_word == "blobs") {
        outputs = r.between(2, 6);
        data["n_classes"] = outputs;
      } else {
        outputs = 1;
        regression = true;
      }
    }
    val_data = data;
    val_data["n_samples"] = r.between(20, 200);
  }
  auto layers = d.cnn ? cnn_layers(r, outputs) : mlp_layers(r, data_word == "fashion_mnist", outputs);

  // What trains: freeze some layers (never all), LoRA on some Linear layers, checkpointing.
  nlohmann::json model{{"layers", layers}};
  std::vector<std::size_t> with_params, linears;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (has_parameters(layers[i]))
      with_params.push_back(i);
    if (layers[i]["type"] == "Linear")
      linears.push_back(i);
  }
  if (r.chance(0.25)) {
    nlohmann::json lora{{"rank", r.pick<int>({1, 2, 4, 8})}, {"layers", nlohmann::json::array()}};
    if (r.chance(0.5))
      lora["alpha"] = r.pick<int>({1, 8, 16});
    for (auto i : linears)
      if (r.chance(0.5) || (i == linears.front() && linears.size() == 1))
        lora["layers"].push_back(layer_name(layers, i));
    if (!lora["layers"].empty()) {
      model["lora"] = lora;
      d.lora = true;
    }
  }
  if (r.chance(0.3)) {
    // Any layer but the last with parameters (so something trains), by name, parameter or prefix.
    nlohmann::json freeze = nlohmann::json::array();
    for (std::size_t k = 0; k + 1 < with_params.size(); ++k) {
      auto i = with_params[k];
      if (!r.chance(0.5))
        continue;
      auto name = layer_name(layers, i);
      auto has_bias = layers[i].value("bias", true) || layers[i]["type"].get<std::string>().find("Norm") != std::string::npos;
      freeze.push_back(r.chance(0.2) && has_bias ? name + (r.chance(0.5) ? ".bias" : ".weight")
                       : r.chance(0.1)           ? name + ".*"
                                                 : name);
    }
    if (!freeze.empty()) {
      model["freeze"] = freeze;
      d.freeze = true;
    }
  }
  if (r.chance(0.35)) {
    model["checkpoint_activations"] = true;
    d.checkpoint = r.chance(0.5) ? "full" : "selective";
    if (d.checkpoint == "full" || r.chance(0.5))
      model["checkpoint_granularity"] = d.checkpoint;
  }

  // How it trains.
  d.precision = r.pick<std::string>({"fp32", "fp32", "bf16", "bf16", "fp16"});
  auto name = r.pick<std::string>({"sgd", "adam", "adamw", "rmsprop"});
  nlohmann::json opt{{"name", name}, {"lr", r.pick<double>({0.001, 0.005, 0.01})}};
  if ((name == "sgd" || name == "rmsprop") && r.chance(0.5))
    opt["momentum"] = 0.9;
  if (r.chance(0.25))
    opt["weight_decay"] = 0.01;
  nlohmann::json loader{{"batch_size", batch}};
  if (r.chance(0.3))
    loader["shuffle"] = false;
  nlohmann::json loop{{"epochs", 1000},
                      {"max_steps", r.between(2, 4)},
                      {"accumulate_steps", d.accumulate},
                      {"precision", d.precision},
                      {"num_threads", 1},
                      {"device", "cpu"}};
  auto g = training_graph_json(data, loader, model["layers"], opt, loop);
  for (auto& n : g["nodes"]) {
    if (n["id"] == "model")
      n["params"] = model;
    if (n["id"] == "loss" && regression)
      n["params"] = {{"kind", "mse"}};
  }
  d.validation = r.chance(0.4);
  if (d.validation) {
    using node = nlohmann::json;
    g["nodes"].push_back(node{{"id", "val_data"}, {"type", "Dataset"}, {"params", val_data}});
    g["nodes"].push_back(node{{"id", "val_loader"},
                              {"type", "DataLoader"},
                              {"params", {{"batch_size", r.pick<int>({16, 64, 100, 256})}}}});
    g["edges"].push_back(node{{"from", "val_data.dataset"}, {"to", "val_loader.dataset"}});
    g["edges"].push_back(node{{"from", "val_loader.dataloader"}, {"to", "loop.val_dataloader"}});
  }
  d.graph = std::move(g);

  d.name = "seed " + std::to_string(seed) + ": " + (d.cnn ? "CNN" : "MLP") + " " + data_word + " b"
           + std::to_string(batch) + " " + d.precision + " " + name + (opt.contains("momentum") ? "+mom" : "")
           + (d.accumulate > 1 ? " acc" + std::to_string(d.accumulate) : "") + (d.freeze ? " freeze" : "")
           + (d.lora ? " lora" : "") + (d.checkpoint.empty() ? "" : " ckpt-" + d.checkpoint)
           + (d.validation ? " val" : "");
  return d;
}

} // namespace cdui::test
