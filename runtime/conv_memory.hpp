#pragma once
// What a convolution allocates on the CPU in libtorch 1.13, for the static estimate's passes
// (runtime/activation_passes.cpp): which kernel runs it (oneDNN's, or libtorch's own im2col one)
// and the buffers of each, measured with the counting allocator (docs/training-memory.md, "How the
// activations are counted"). Torch-free.

#include <cstdint>

#include "runtime/kernel_memory.hpp"

namespace cdui::runtime {

/// libtorch 1.13's choice of oneDNN for an fp32 convolution on the CPU (ConvParams::use_mkldnn):
/// not for a 1x1 kernel of stride 1 at a batch below this on one intra-op thread ...
inline constexpr std::int64_t onednn_1x1_batch = 16;
/// ... nor for a batch of one sample through a kernel of at most 3 over at most 20480 values.
inline constexpr std::int64_t onednn_single_kernel = 3;
inline constexpr std::int64_t onednn_single_elements = 20480;

/// Whether a convolution at batch `b` runs on oneDNN's kernels (always in 16 bits, on AVX-512), or
/// on libtorch's own (slow_conv2d: im2col columns and a matrix product), as libtorch 1.13 picks.
[[nodiscard]] bool onednn_convolution(const layer_plan& l, std::int64_t b, bool half, bool one_thread);

/// A convolution's output (returned), made as its kernel makes it at batch `b`.
timeline::id conv_output(timeline& t, const layer_plan& l, std::int64_t b, bool half);

/// What a convolution's backward gives: its input's gradient (none when its input needs none) and
/// its weights' (0 bytes when the weight is frozen), for the caller to keep or let go.
struct conv_gradients {
  timeline::id input = timeline::none;
  timeline::id weight = timeline::none;
};

/// A convolution's backward at batch `b`, its kernel's copies made and let go on the way.
conv_gradients conv_backward(timeline& t, const layer_plan& l, std::int64_t b, const layer_gradients& c);

} // namespace cdui::runtime
