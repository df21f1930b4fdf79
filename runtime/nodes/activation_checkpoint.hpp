#pragma once

// Activation checkpointing (docs/training-memory.md): a Model's forward pass that keeps only each
// block's input for the backward pass, and recomputes the block there. libtorch's C++ API has no
// torch.utils.checkpoint; this is its non-reentrant idea as a custom autograd function whose
// backward recomputes the block and hands back its input's and its parameters' gradients, so
// the parameters' gradients reach them (and DDP's hooks) through the outer backward pass. Dropout
// masks, autocast and BatchNorm's running statistics are as in the forward pass, so the gradients
// are those of the plain forward pass. Private to runtime/nodes.

#include <ATen/core/Tensor.h>

#include "runtime/nodes/values.hpp"

namespace cdui::runtime::nodes {

/// The model's forward pass: block by block through the checkpoint when the Model asked for it
/// (`checkpoint_blocks`), the model trains and grad mode is on; else the layers' own.
[[nodiscard]] at::Tensor model_forward(model_value& model, const at::Tensor& x);

} // namespace cdui::runtime::nodes
