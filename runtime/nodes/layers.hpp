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
//
// BatchNorm2d, training on the CPU in fp32 NCHW, has a forward pass of its own too: libtorch
// 1.13's takes 1.3 ms for the CNN example's [64, 16, 28, 28] (it accumulates in double, one
// element at a time); this one sums each row of a plane in fp32 and the rows in fp64, in three
// passes over the input, and hands libtorch's native_batch_norm_backward the same saved mean and
// inverse standard deviation. The same buffers, names and updates as torch::nn::BatchNorm2d
// (running statistics by momentum, the unbiased variance, num_batches_tracked), so saved models
// and checkpoints are the same. Private to runtime/nodes.

#include <cstdint>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/normalization.h>

namespace cdui::runtime::nodes {

/// BatchNorm2d over `channels` channels, with torch::nn::BatchNorm2d's defaults (eps 1e-5,
/// momentum 0.1, affine, running statistics) and its parameters and buffers, in its order.
/// (Not derived from BatchNorm2dImpl: libtorch does not export the template's pretty_print.)
class batch_norm2d_impl : public torch::nn::Module {
public:
  explicit batch_norm2d_impl(std::int64_t channels);

  at::Tensor forward(const at::Tensor& x);

  at::Tensor weight, bias, running_mean, running_var, num_batches_tracked;

private:
  static constexpr double eps_ = 1e-5, momentum_ = 0.1;
};

/// BatchNorm2d's training forward pass over an [N, C, H, W] fp32 contiguous `x` on the CPU: the
/// output, the batch's mean and its inverse standard deviation 1 / sqrt(var + eps) (the biased
/// variance, as native_batch_norm saves them); the running statistics move by `momentum`
/// (towards the unbiased variance) when they are defined.
struct batch_norm_result {
  at::Tensor out, mean, invstd;
};
[[nodiscard]] batch_norm_result batch_norm_forward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                                   const at::Tensor& running_mean, const at::Tensor& running_var,
                                                   double momentum, double eps);

/// LayerNorm (torch::nn::LayerNorm's parameters, names and options) that computes in fp32 under
/// autocast, as CUDA autocast's rule for layer_norm has it: libtorch 1.13's CPU autocast has none,
/// and its kernel refuses a bf16 input with fp32 weights. Its output is fp32; the next Linear or
/// Conv2d casts it again.
class layer_norm_impl : public torch::nn::LayerNormImpl {
public:
  using LayerNormImpl::LayerNormImpl;
  at::Tensor forward(const at::Tensor& x);
};

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
