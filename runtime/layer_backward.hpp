#pragma once
// One layer's backward pass in the static estimate's training step (runtime/activation_passes.cpp):
// what libtorch 1.13's autograd functions for it allocate and let go, from what the layer's forward
// pass kept. Torch-free.

#include <cstdint>
#include <vector>

#include "runtime/activation_passes.hpp"
#include "runtime/kernel_memory.hpp"

namespace cdui::runtime {

/// What one layer's forward pass kept for its backward, and the element sizes it computed in.
struct layer_kept {
  std::vector<timeline::id> saved;
  std::int64_t in_size = float_bytes;        // the input it computed on (its gradient's size)
  std::int64_t out_size = float_bytes;
  std::int64_t received_size = float_bytes;  // the input as it came: its gradient goes back in it
  bool grad_in = false;                      // whether its input requires grad
  layer_training trains;
  /// A LoRA layer's adapter: its rank, and what its backward lets go of as it runs.
  std::int64_t lora_rank = 0;
  timeline::id lora_input = timeline::none;    // x, kept by x A^T
  timeline::id lora_product = timeline::none;  // x A^T, kept by its product with B
};

/// Layer `l`'s backward at batch `b` from its output's gradient `g`: its input's gradient (returned;
/// none when its input needs none, in the format the input came in), its weights' gradients and
/// temporaries; what it kept is let go. `grads`: where the weights' gradients go when the caller
/// hands them back later (a checkpointed block); null: accumulated at once.
timeline::id layer_backward(timeline& t, const layer_plan& l, layer_kept& k, timeline::id g, std::int64_t b,
                            std::vector<timeline::id>* grads);

} // namespace cdui::runtime
