#pragma once
// What libtorch 1.13's CPU kernels allocate, for the static estimate's passes
// (runtime/activation_passes.cpp): a timeline of simulated allocations and the rules of oneDNN's
// convolutions and 16-bit matrix products, measured with the counting allocator on this project's
// CPUs (docs/benchmarks.md, "The static estimate against the measured peak"). Torch-free.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/layer_shapes.hpp"

namespace cdui::runtime {

inline constexpr std::int64_t float_bytes = 4;
inline constexpr std::int64_t half_bytes = 2;
inline constexpr std::int64_t index_bytes = 8;  // int64 class labels and max-pool indices

/// Bytes held at once while tensors come and go: the simulated allocator of one pass. A tensor is
/// an id with a count of holders; it is let go when the last one drops it.
class timeline {
public:
  using id = int;
  static constexpr id none = -1;

  /// `conv_block`: the channels oneDNN's blocked layout pads to (pass_model::conv_block).
  explicit timeline(std::int64_t conv_block = 16) : conv_block_(conv_block) {}
  [[nodiscard]] std::int64_t conv_block() const { return conv_block_; }

  id alloc(std::int64_t bytes);
  /// Something held for a moment on top of what is live (a library's scratch buffer).
  void spike(std::int64_t bytes);
  id hold(id t);
  void drop(id t);
  void drop_all(std::vector<id>& ts);
  [[nodiscard]] std::int64_t peak() const { return peak_; }

private:
  std::vector<std::int64_t> sizes_;
  std::vector<int> refs_;
  std::int64_t live_ = 0;
  std::int64_t peak_ = 0;
  std::int64_t conv_block_;
};

/// The channels oneDNN's blocked layout pads a convolution's tensors to: 16 with its AVX-512
/// kernels (and on CUDA, where these rules stand in), 8 with its AVX2 ones.
[[nodiscard]] std::int64_t conv_block(bool avx512);

/// Why a loop training in 16 bits on CPU kernels without AVX-512 gets a rough estimate: the 16-bit
/// rules here were measured on AVX-512 kernels only.
[[nodiscard]] std::string unmeasured_16_bit_kernels(const std::string& loop_id, const std::string& precision,
                                                     const std::string& device);

/// Elements of a batch of `b` samples of `shape`.
[[nodiscard]] std::int64_t batch_elements(std::int64_t b, const sample_shape& shape);

/// The elements of a conv's batch in oneDNN's blocked layout: channels padded to `block`.
[[nodiscard]] std::int64_t blocked(std::int64_t b, const sample_shape& shape, std::int64_t block);

/// What a Linear or Conv2d computes on, held: the chain's tensor, or under autocast (`half`) its
/// 16-bit copy when the chain is still fp32 (the chain is 16-bit from there on).
timeline::id layer_input(timeline& t, bool half, timeline::id chain, std::int64_t& chain_size,
                         std::int64_t elements_in);

/// The model's output as the loss takes it: cast back to fp32 when it is 16-bit.
timeline::id output_in_float(timeline& t, timeline::id chain, std::int64_t chain_size, std::int64_t outputs);

/// Two parts of a gradient (of `bytes`) summed as autograd's input buffer does in libtorch 1.13:
/// into a new tensor, then both parts let go.
timeline::id accumulate(timeline& t, timeline::id first, timeline::id second, std::int64_t bytes);

/// oneDNN's 16-bit matrix product packs its right-hand matrix (k x n) with n padded to 64.
[[nodiscard]] std::int64_t gemm_scratch(std::int64_t k, std::int64_t n);

/// BatchNorm's per-channel mean and inverse deviation; LayerNorm's per-row mean and rstd.
[[nodiscard]] std::int64_t norm_statistics(const layer_plan& l, std::int64_t b);

/// One layer without autograd at batch `b`, its input `chain` let go once it has its output
/// (returned): validation's forward pass, or (`train_mode`) a checkpointed block's in training,
/// where Dropout draws its mask. Autocast's copies of weights that train (`weight_trains`, a LoRA
/// adapter's of `lora_rank`) go into `cache`; a frozen weight's lives for the op.
timeline::id no_grad_layer(timeline& t, timeline::id chain, std::int64_t& chain_size, std::vector<timeline::id>& cache,
                           const layer_plan& l, bool weight_trains, std::int64_t lora_rank, std::int64_t b,
                           bool half, bool train_mode);

/// A convolution's output (returned), made as oneDNN makes it at batch `b`.
timeline::id conv_output(timeline& t, const layer_plan& l, std::int64_t b, bool half);

/// How a layer's backward runs: its input's and output's element sizes, and what it computes a
/// gradient for.
struct layer_gradients {
  std::int64_t in_size = float_bytes;
  std::int64_t out_size = float_bytes;
  bool weight = true;
  bool input = false;
};

/// A convolution's backward at batch `b`: its scratch copies (the one that lives on goes into
/// `temporaries`), its input's gradient into `gin` when it computes one. Gives the weights'
/// gradient (0 bytes when the weight is frozen) for the caller to keep or let go.
timeline::id conv_backward(timeline& t, const layer_plan& l, std::int64_t b, const layer_gradients& c,
                           std::vector<timeline::id>& temporaries, timeline::id& gin);

/// A LoRA adapter's backward (of `rank`, on Linear `l`) from the layer's output gradient: the
/// scale's product, B's and A's gradients, and (when the input needs one) the adapter's part of
/// the input's gradient, returned (none otherwise). The frozen Linear's backward comes next.
timeline::id lora_backward(timeline& t, const layer_plan& l, std::int64_t rank, const layer_gradients& c,
                           std::int64_t b);

} // namespace cdui::runtime
