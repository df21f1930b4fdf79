#pragma once
// The shape rules of the Model node's layers, torch-free: what each layer type takes, the shape it
// gives for the shape it receives, and its parameter count. The Model node builds its layers from
// these plans and the static estimate counts memory from them, so the two cannot drift.

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace cdui::runtime {

/// The shape of one sample, without the batch dimension.
using sample_shape = std::vector<std::int64_t>;

/// The fields each layer type takes: type -> field -> required.
[[nodiscard]] const std::map<std::string, std::map<std::string, bool>>& layer_fields();

/// One layer of a Model, planned for the shape it receives.
struct layer_plan {
  std::string type;
  sample_shape in;
  sample_shape out;
  /// Linear: out_features; Conv2d: out_channels.
  std::int64_t out_features = 0;
  /// Conv2d and MaxPool2d.
  std::int64_t kernel = 0;
  std::int64_t stride = 1;
  std::int64_t padding = 0;
  bool bias = true;
  /// Dropout.
  double p = 0.5;
  /// Every parameter of the layer (weights, biases, a norm's affine weights).
  std::int64_t parameters = 0;
  /// The parameters autocast casts to 16 bits (those of Linear and Conv2d).
  std::int64_t cast_parameters = 0;
  /// The float elements of its buffers (BatchNorm's running mean and variance).
  std::int64_t buffer_floats = 0;
  /// Its int64 buffers (BatchNorm's num_batches_tracked).
  std::int64_t buffer_int64s = 0;
};

/// The most elements a sample or a layer may have: larger shapes are refused before any product
/// could overflow int64 (2^40 floats are 4 TiB, beyond any card).
inline constexpr std::int64_t max_elements = std::int64_t{1} << 40;

/// Plans `layer` (an object of layer_fields' types, checked by check_layers) for input `in`.
/// On a shape it cannot take: the sentence, starting with `where` ("layer 2 (Linear)").
[[nodiscard]] std::variant<layer_plan, std::string>
plan_layer(const nlohmann::json& layer, const sample_shape& in, const std::string& where);

/// Plans every layer in order from `input`; the first error as in plan_layer ("layer N (Type)").
[[nodiscard]] std::variant<std::vector<layer_plan>, std::string>
plan_layers(const nlohmann::json& layers, const sample_shape& input);

/// "[N, 1, 28, 28]".
[[nodiscard]] std::string shape_text(const sample_shape& sample);

/// The elements of a sample of this shape (1 for a scalar).
[[nodiscard]] std::int64_t elements(const sample_shape& sample);

/// Where the Model's blocks begin, as layer indices (the first is 0): a block is a Linear or Conv2d
/// layer and the layers after it up to the next one; the layers before the first of them join the
/// first block. `checkpoint_activations` keeps each block's input and recomputes the block.
[[nodiscard]] std::vector<std::size_t> block_starts(const nlohmann::json& layers);

/// Whether layers [begin, end) keep, for their backward pass, a tensor besides their input and
/// output: what checkpointing them would save. A Linear or Conv2d keeps its input, ReLU and Tanh
/// their output, Flatten and Dropout with p 0 nothing; so [Flatten, Linear, ReLU] keeps nothing of
/// its own, while MaxPool2d (its input and indices), a norm, GELU or Dropout do.
[[nodiscard]] bool keeps_inner_activations(const nlohmann::json& layers, std::size_t begin, std::size_t end);

/// How far activation checkpointing recomputes: the Model's `checkpoint_granularity`.
enum class recompute_granularity { full, selective };

/// The multiply-adds a Linear or Conv2d layer spends on each element of its output (its input
/// features, or its input channels times its kernel's area); 0 for the other layers.
[[nodiscard]] std::int64_t macs_per_output(const layer_plan& plan);

/// Under selective granularity a Linear or Conv2d whose output costs at least this many
/// multiply-adds an element is kept, not recomputed: recomputing it would cost more than the
/// element-wise layers after it that checkpointing recomputes (a 3x3 convolution of one channel
/// costs 9 and is recomputed; one of 16 channels costs 144 and is kept).
inline constexpr std::int64_t selective_keep_macs = 64;

/// A stretch [begin, end) of a Model's layers in its training forward pass: through the
/// checkpoint (it keeps its input alone and is run again in the backward pass), or as its layers.
struct forward_segment {
  std::size_t begin = 0;
  std::size_t end = 0;
  bool checkpointed = false;
  bool operator==(const forward_segment& o) const {
    return begin == o.begin && end == o.end && checkpointed == o.checkpointed;
  }
};

/// `checkpoint_activations`' forward pass over `layers` (planned as `plans`), in segments that
/// cover every layer in order. Each block (block_starts) goes through the checkpoint when it keeps
/// a tensor besides its input and output (keeps_inner_activations), but the last, whose backward
/// follows its forward at once. Selective: a block whose Linear or Conv2d costs selective_keep_macs
/// or more runs up to that layer as itself, so the layer's output is kept, and checkpoints the
/// layers after it when they keep something of their own.
[[nodiscard]] std::vector<forward_segment> checkpoint_plan(const nlohmann::json& layers,
                                                           const std::vector<layer_plan>& plans,
                                                           recompute_granularity how);

/// The most layers a Model takes: ResNet-152 written out layer by layer is about 500. Validating
/// 700,000 took 14.7 s of a request thread and 1.7 GB (issue 33).
inline constexpr std::size_t max_model_layers = 10'000;

/// The field errors of a Model's `layers` param, each a whole sentence naming node and layer.
[[nodiscard]] std::vector<std::string> check_layers(const std::string& node_id,
                                                    const nlohmann::json& layers);

} // namespace cdui::runtime
