#pragma once
// The static estimate's terms on a CUDA card (docs/training-memory.md, "The CUDA terms"): what the
// caching allocator reserves for the model's tensors and its passes, through its model
// (runtime/cuda_allocator_model.hpp). Torch-free.

#include <cstdint>
#include <vector>

#include "runtime/activation_passes.hpp"
#include "runtime/layer_shapes.hpp"

namespace cdui::runtime {

/// The bytes of each tensor the model keeps on the card while it trains, in the order they come:
/// each parameter (a LoRA adapter's A and B after its layer's), the buffers (BatchNorm's running
/// mean, variance and step count), each trainable parameter's gradient, then its optimizer state
/// (`state_tensors` tensors of its size: 2 for Adam, 1 for SGD with momentum, ...). `training`: one
/// per layer (empty: everything trains).
[[nodiscard]] std::vector<std::int64_t> persistent_tensors(const std::vector<layer_plan>& layers,
                                                           const std::vector<layer_training>& training,
                                                           std::int64_t state_tensors);

} // namespace cdui::runtime
