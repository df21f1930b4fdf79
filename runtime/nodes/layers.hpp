#pragma once

// The Model's layers of cdui's own, where libtorch's would not do.
//
// Dropout draws its masks from the run's generator, so concurrent runs in one process stay
// reproducible (torch::nn::Dropout uses the process-wide generator).
//
// MaxPool2d has a forward pass of its own on the CPU. libtorch 1.13's max_pool2d_with_indices
// takes 3.2 ms for the CNN example's first pooling at batch 64 on NCHW tensors (28% of its
// training step in PyTorch's profiler): a generic loop that mispredicts its comparisons. This
// one computes the same maxima and the same indices (the first maximum in the window's
// row-major order, NaN propagating, as PyTorch does), four 2x2 windows at a time with SSE2,
// 0.55 ms; its backward pass is PyTorch's own max_pool2d_with_indices_backward. It keeps what
// PyTorch's keeps (the input and the indices), so the memory a step holds, and the estimate of
// it, are unchanged. Another device, a channels-last or integer tensor goes to libtorch's.
// Private to runtime/nodes.

#include <cstdint>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

namespace cdui::runtime::nodes {

/// Dropout with probability `p`, masks drawn from `gen`; in eval mode, or with p 0, the identity.
class dropout_impl : public torch::nn::Module {
public:
  dropout_impl(double p, at::Generator gen) : p_(p), gen_(std::move(gen)) {}

  at::Tensor forward(const at::Tensor& x);

private:
  double p_;
  at::Generator gen_;
};

/// max_pool2d of an [N, C, H, W] `x` over `kernel` x `kernel` windows `stride` apart, with no
/// padding or dilation, and its indices (h * W + w in each plane); with `indices` false the
/// second tensor is undefined. The CPU's contiguous floating-point tensors only.
[[nodiscard]] std::pair<at::Tensor, at::Tensor> max_pool_forward(const at::Tensor& x, std::int64_t kernel,
                                                                 std::int64_t stride, bool indices);

/// The Model's MaxPool2d layer: max_pool_forward where it applies, with autograd, else libtorch's.
class max_pool_impl : public torch::nn::Module {
public:
  max_pool_impl(std::int64_t kernel, std::int64_t stride) : kernel_(kernel), stride_(stride) {}

  at::Tensor forward(const at::Tensor& x);

private:
  std::int64_t kernel_, stride_;
};

} // namespace cdui::runtime::nodes
