#pragma once

// The CheckpointSaver archive (model, optimizer state, epoch, loss scale), which CheckpointSaver,
// CheckpointLoader and a TrainingLoop's own checkpoints share.

#include <iosfwd>
#include <string>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "runtime/nodes/values.hpp"

namespace cdui::runtime::nodes {

/// Bytes as a uint8 tensor, and back.
[[nodiscard]] at::Tensor bytes_tensor(const std::string& bytes);
[[nodiscard]] std::string tensor_bytes(const at::Tensor& t);

/// Writes `model`'s weights, the optimizer's state and epoch (none: epoch 0) and the loss scale
/// (when enabled) into `archive`.
void write_checkpoint(torch::serialize::OutputArchive& archive, torch::nn::Module& model,
                      const optimizer_state_value* state, const grad_scaler_state_value* scaler);

/// Reads the torch archive in `in` into `archive`; `path` (quoted) names it in the node_error
/// ("cannot load PATH into this model: ...") thrown when it is not one.
void load_archive(torch::serialize::InputArchive& archive, std::istream& in, const std::string& path);

/// Loads a checkpoint `archive`'s weights into `model` (refused unless every parameter and buffer
/// is there with the same shape) and its optimizer state and loss scale into `state` and
/// `scaler`. Throws node_error naming `path`.
void read_checkpoint(torch::serialize::InputArchive& archive, const std::string& path, torch::nn::Module& model,
                     optimizer_state_value& state, grad_scaler_state_value& scaler);

} // namespace cdui::runtime::nodes
