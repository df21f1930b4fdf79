#pragma once
// The activation part of the static estimate (runtime/estimate.hpp): one training step and one
// evaluation pass simulated layer by layer on a timeline of allocations, with the rules of
// libtorch's CPU kernels and autograd (what each forward keeps for its backward, what each backward
// allocates) measured with the counting allocator (docs/training-memory.md, "The static
// estimate"). Torch-free.

#include <cstdint>
#include <vector>

#include "runtime/cuda_allocator_model.hpp"
#include "runtime/layer_shapes.hpp"

namespace cdui::runtime {

/// Which of a layer's parameters train (Model.freeze and lora), and its LoRA adapter's rank.
struct layer_training {
  bool weight = true;  // a Linear's or Conv2d's weight, a norm's scale
  bool bias = true;
  std::int64_t lora_rank = 0;  // 0: no adapter
};

/// What the passes need to know of a model and its loop.
struct pass_model {
  const std::vector<layer_plan>* layers = nullptr;
  /// One per layer; empty: every parameter trains.
  std::vector<layer_training> training;
  /// With checkpoint_activations: the training forward pass in segments (checkpoint_plan);
  /// empty: the layers' own.
  std::vector<forward_segment> checkpoint;
  /// bf16 or fp16 autocast.
  bool half = false;
  bool cross_entropy = true;
  /// Class labels (int64) or value targets (float).
  bool classification = true;
  /// The channels oneDNN's blocked layout pads a convolution's tensors to: 16 with AVX-512, 8 with
  /// AVX2.
  std::int64_t conv_block = 16;
  /// The loop runs on one intra-op thread (its num_threads is 1): libtorch then runs small 1x1
  /// convolutions with its own kernel, not oneDNN's (runtime/conv_memory.hpp).
  bool one_thread = false;
  /// Autocast caches its copies of the weights that train for the whole forward pass: libtorch
  /// 1.13 does so for fp16 only; a bf16 copy lives for its op, or as long as a backward keeps it.
  bool cached_copies = false;
  /// The Model has a Dropout layer: each block through the checkpoint keeps a copy of its
  /// generator's state until the backward pass ends, and its rerun one more.
  bool dropout_generator = false;
  /// On a CUDA card: the caching allocator's model that the passes' tensors go through (it keeps
  /// what the passes leave it: the blocks it cached), and CUDA's kernels in place of the CPU's
  /// (no oneDNN scratch or blocked layouts). Null: the CPU.
  cuda_allocator_model* cuda = nullptr;
};

/// What an optimizer step holds for a moment: `count` tensors of `bytes` each.
struct step_temporaries {
  std::int64_t count = 0;
  std::int64_t bytes = 0;
};

/// The peak of one training step at batch `b` besides the persistent state: the batch, the forward
/// pass and what autograd keeps, the loss, the backward pass, then the optimizer's temporaries
/// (held for a moment while the batch still is).
[[nodiscard]] std::int64_t training_step_peak(const pass_model& model, std::int64_t b,
                                              const step_temporaries& optimizer_temporaries);

/// The peak of one validation batch of `b`: under no_grad, over a view of the dataset (not copied),
/// each layer's output freed once the next one has it.
[[nodiscard]] std::int64_t evaluation_peak(const pass_model& model, std::int64_t b);

} // namespace cdui::runtime
