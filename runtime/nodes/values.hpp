#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>
#include <torch/nn/modules/container/sequential.h>

#include "runtime/layer_shapes.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/precision.hpp"

namespace torch::optim {
class Optimizer;
}

/// The values built-in nodes pass along edges. Private to runtime/nodes.
namespace cdui::runtime::nodes {

/// A whole dataset held on the host: inputs [N, ...], targets [N] (class ids) or [N, k] (values).
struct dataset_value {
  std::string name;
  at::Tensor inputs;
  at::Tensor targets;
  bool classification = true;
  std::int64_t num_classes = 0;
  /// The shape of one sample, without the batch dimension.
  std::vector<std::int64_t> sample_shape;

  [[nodiscard]] std::int64_t size() const { return inputs.size(0); }
};

struct loader_value {
  std::shared_ptr<const dataset_value> dataset;
  std::int64_t batch_size = 32;
  bool shuffle = true;
  bool drop_last = false;

  [[nodiscard]] std::int64_t num_batches() const { return batches_for(dataset->size()); }
  /// The batches of `samples` of its samples (a process's part of them under DDP).
  [[nodiscard]] std::int64_t batches_for(std::int64_t samples) const {
    return drop_last ? samples / batch_size : (samples + batch_size - 1) / batch_size;
  }
};

struct model_value {
  torch::nn::Sequential module;
  std::vector<std::int64_t> input_shape;
  std::vector<std::int64_t> output_shape;
  std::int64_t parameter_count = 0;
  /// The parameters that train: neither frozen nor a LoRA layer's own weights.
  std::int64_t trainable_count = 0;
  /// With `checkpoint_activations`: its training forward pass in segments (layer_shapes.hpp's
  /// checkpoint_plan); empty: the layers' own forward pass.
  std::vector<forward_segment> checkpoint_segments;
  /// The multiply-adds of one sample's forward pass through its Linear and Conv2d layers: what
  /// decides whether the loop's ops are worth several intra-op threads.
  std::int64_t macs_per_sample = 0;
  /// The first BatchNorm layer that sees one value per channel in a sample ("BatchNorm1d3": one
  /// after a Linear, or a BatchNorm2d over 1x1 images): it cannot train on a batch of one sample.
  /// Empty: none.
  std::string single_value_norm;
  /// The generator the Dropout layers draw their masks from, when there are any: a recomputed
  /// block replays its state.
  at::Generator dropout_rng;
};

/// {"parameters", "trainable_parameters", "trainable_share"} of a model, for node_config and the
/// final metrics.
[[nodiscard]] nlohmann::json parameter_figures(const model_value& model);

struct loss_value {
  std::string kind;  // cross_entropy | mse
};

struct optimizer_value {
  std::string name;  // sgd | adam | adamw | rmsprop
  double lr = 1e-3;
  double weight_decay = 0.0;
  double momentum = 0.0;
};

struct scheduler_value {
  std::string kind;  // step | cosine
  std::int64_t step_size = 10;
  double gamma = 0.1;
  std::int64_t t_max = 10;
  double eta_min = 0.0;
};

/// An optimizer's state as torch's archive bytes, and the epochs trained so far.
struct optimizer_state_value {
  std::string bytes;
  std::int64_t epoch = 0;
  /// Which optimizer wrote the state (sgd, adam, ...); empty when unknown.
  std::string optimizer;
};

/// A loss scaler's state, carried through checkpoints so a resumed fp16 run keeps its scale.
/// `enabled` is false when the loop that gave it trained without a scaler.
struct grad_scaler_state_value {
  bool enabled = false;
  double scale = 0.0;
  std::int64_t growth_tracker = 0;
};

/// The parameters of `model` that train (require a gradient), in the module's order.
[[nodiscard]] std::vector<at::Tensor> trainable_parameters(torch::nn::Module& model);

/// Builds the optimizer the spec describes over `parameters`.
[[nodiscard]] std::unique_ptr<torch::optim::Optimizer>
make_optimizer(const optimizer_value& spec, std::vector<at::Tensor> parameters);

/// Sets every param group's learning rate.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

/// The learning rate after `epochs_done` epochs under the schedule.
[[nodiscard]] double scheduled_lr(const scheduler_value& s, double base_lr,
                                  std::int64_t epochs_done);

/// The mean loss over a batch.
[[nodiscard]] at::Tensor compute_loss(const loss_value& loss, const at::Tensor& output,
                                      const at::Tensor& target);

/// Batch `b` of the loader under `order` (indices into the dataset: a permutation of it, a
/// process's part of one, or undefined for the whole dataset in order).
struct batch {
  at::Tensor inputs;
  at::Tensor targets;
};
[[nodiscard]] batch get_batch(const loader_value& loader, const at::Tensor& order, std::int64_t b);

/// The order of one epoch: a permutation drawn from `rng` when the loader shuffles, else undefined.
[[nodiscard]] at::Tensor epoch_order(const loader_value& loader, at::Generator& rng);

/// The torch device a cdui device name executes on (sim cards execute on the CPU).
[[nodiscard]] c10::Device torch_device(const std::string& name);

/// Loss and accuracy of a model over every batch of a loader, in eval mode and under no_grad.
struct evaluation {
  double loss = 0.0;
  double accuracy = 0.0;
  std::int64_t samples = 0;
  /// Each batch's loss (mean over its samples) and samples, in order (with a loss function).
  std::vector<double> batch_losses;
  std::vector<std::int64_t> batch_samples;
};
/// `order`: the samples to evaluate (a process's part under DDP); undefined: every one, in order.
[[nodiscard]] evaluation evaluate(torch::nn::Sequential& model, const loader_value& loader,
                                  const loss_value* loss, c10::Device device,
                                  precision forward_precision = precision::fp32,
                                  const at::Tensor& order = {});

} // namespace cdui::runtime::nodes
