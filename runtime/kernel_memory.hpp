#pragma once
// What libtorch 1.13's CPU kernels allocate, for the static estimate's passes
// (runtime/activation_passes.cpp): a timeline of simulated allocations (through the CUDA caching
// allocator's model on a CUDA card) and the rules of oneDNN's 16-bit matrix products, measured
// with the counting allocator on this project's CPUs (docs/benchmarks.md, "The static estimate
// against the measured peak"); the convolutions' are in runtime/conv_memory.hpp. Torch-free.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda_allocator_model.hpp"
#include "runtime/layer_shapes.hpp"

namespace cdui::runtime {

inline constexpr std::int64_t float_bytes = 4;
inline constexpr std::int64_t half_bytes = 2;
inline constexpr std::int64_t index_bytes = 8;  // int64 class labels and max-pool indices
/// A copy of libtorch 1.13's CPU generator state (CPUGeneratorImplState, as get_state() gives it).
inline constexpr std::int64_t generator_state_bytes = 5056;

/// Bytes held at once while tensors come and go: the simulated allocator of one pass. A tensor is
/// an id with a count of holders; it is let go when the last one drops it. On a CUDA card the same
/// tensors also go through the caching allocator's model, which the timeline lets go of what it
/// still holds when it ends.
class timeline {
public:
  using id = int;
  static constexpr id none = -1;

  /// `conv_block`: the channels oneDNN's blocked layout pads to (pass_model::conv_block);
  /// `one_thread`: the loop runs one intra-op thread (libtorch picks convolution kernels by it);
  /// `cuda`: the pass runs on a CUDA card, its tensors in that allocator (null: on the CPU's kernels).
  explicit timeline(std::int64_t conv_block = 16, bool one_thread = false, cuda_allocator_model* cuda = nullptr)
      : conv_block_(conv_block), one_thread_(one_thread), cuda_(cuda) {}
  ~timeline();
  timeline(const timeline&) = delete;
  timeline& operator=(const timeline&) = delete;
  [[nodiscard]] std::int64_t conv_block() const { return conv_block_; }
  [[nodiscard]] bool one_thread() const { return one_thread_; }
  /// Whether the pass runs on a CUDA card's kernels (cuDNN, cuBLAS) rather than the CPU's.
  [[nodiscard]] bool cuda() const { return cuda_ != nullptr; }

  id alloc(std::int64_t bytes);
  /// Something held for a moment on top of what is live (a temporary of an op); `count` tensors of
  /// `bytes` each.
  void spike(std::int64_t bytes, std::int64_t count = 1);
  /// A CPU kernel's scratch buffer (oneDNN's), held for a moment; none on a CUDA card, whose
  /// libraries work in workspaces of their own (the estimate's cuda_workspace).
  void cpu_scratch(std::int64_t bytes);
  id hold(id t);
  void drop(id t);
  void drop_all(std::vector<id>& ts);
  [[nodiscard]] std::int64_t peak() const { return peak_; }

private:
  std::vector<std::int64_t> sizes_;
  std::vector<int> refs_;
  std::vector<cuda_allocator_model::id> blocks_;  // each tensor's block in the CUDA model
  std::int64_t live_ = 0;
  std::int64_t peak_ = 0;
  std::int64_t conv_block_;
  bool one_thread_;
  cuda_allocator_model* cuda_;
};

/// Elements of a batch of `b` samples of `shape`.
[[nodiscard]] std::int64_t batch_elements(std::int64_t b, const sample_shape& shape);

/// `c` rounded up to a multiple of `to`.
[[nodiscard]] std::int64_t padded(std::int64_t c, std::int64_t to);

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

/// libtorch 1.13 hands a 16-bit matrix product of (m x k) by (k x n) to oneDNN when m k n passes
/// this (its mkldnn_gemm_min_size, 16 * 16 * 16); a smaller one runs its own kernel, without scratch.
inline constexpr std::int64_t onednn_matmul_min_size = 16 * 16 * 16;

/// oneDNN's scratch for a 16-bit matrix product of (m x k) by (k x n) on its AVX-512 BF16 kernels,
/// measured with the counting allocator: the right-hand matrix packed in a panel of k (padded to
/// 32, at most 512; 1024 past 1024) by 64 columns, with 768 bytes beside it; past 512 of k, an fp32
/// accumulator of up to 256 rows (64 for a single column) by 64 columns; a left-hand matrix read
/// transposed (a weight's gradient) is copied first, in blocks of at most 256 rows (one row for a
/// single column). Exact for m and k up to 256 and for any n; up to 2% off at 512.
[[nodiscard]] std::int64_t matmul_scratch(std::int64_t m, std::int64_t k, std::int64_t n, bool left_transposed);

/// BatchNorm's per-channel mean and inverse deviation; LayerNorm's per-row mean and rstd.
[[nodiscard]] std::int64_t norm_statistics(const layer_plan& l, std::int64_t b);

/// How a layer runs without autograd (no_grad_layer).
struct no_grad_run {
  /// Under 16-bit autocast.
  bool half = false;
  /// Autocast caches the 16-bit copies of the weights that train for the whole pass (in libtorch
  /// 1.13 for fp16 only: a bf16 copy lives for its op).
  bool cached = false;
  bool weight_trains = false;
  std::int64_t lora_rank = 0;  // a LoRA adapter's (0: none)
  /// A checkpointed block's forward pass in training, where Dropout draws its mask.
  bool train_mode = false;
};

/// One layer without autograd at batch `b`, its input `chain` let go once it has its output
/// (returned): validation's forward pass, or a checkpointed block's in training. Autocast's cached
/// copies go into `cache`.
timeline::id no_grad_layer(timeline& t, timeline::id chain, std::int64_t& chain_size, std::vector<timeline::id>& cache,
                           const layer_plan& l, std::int64_t b, const no_grad_run& run);

/// How a layer's backward runs: its input's and output's element sizes, and what it computes a
/// gradient for.
struct layer_gradients {
  std::int64_t in_size = float_bytes;
  std::int64_t out_size = float_bytes;
  bool weight = true;
  bool input = false;
};

/// What a LoRA adapter's backward lets go of as it runs: the layer's output gradient, x A^T and x.
struct lora_held {
  timeline::id gradient = timeline::none;
  timeline::id product = timeline::none;
  timeline::id input = timeline::none;
};

/// A LoRA adapter's backward (of `rank`, on Linear `l`) from the layer's output gradient, after the
/// frozen Linear's: the scale's product, B's gradient (added at once), A's (into `temporaries`:
/// added once the input's gradient is summed) and, when the input needs one, the adapter's part of
/// the input's gradient, returned (none otherwise). What `held` names is let go on the way.
timeline::id lora_backward(timeline& t, const layer_plan& l, std::int64_t rank, const layer_gradients& c,
                           std::int64_t b, const lora_held& held, std::vector<timeline::id>& temporaries);

} // namespace cdui::runtime
