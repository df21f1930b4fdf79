#include "runtime/nodes/layers.hpp"

#include <cmath>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/torch.h>

namespace cdui::runtime::nodes {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Whether max_pool_forward computes for `x`.
bool ours(const at::Tensor& x) {
  return x.is_cpu() && x.dim() == 4 && x.is_contiguous() && at::isFloatingType(x.scalar_type())
         && x.layout() == at::kStrided;
}

/// `take ? v : kept`, computed with bit masks: on random data a branch here mispredicts half
/// the time, and the compiler turns the plain conditional into one.
template <class A>
A select(bool take, A v, A kept) {
  using bits = std::conditional_t<sizeof(A) == 8, std::uint64_t, std::uint32_t>;
  bits vb, kb;
  std::memcpy(&vb, &v, sizeof(A));
  std::memcpy(&kb, &kept, sizeof(A));
  auto mask = static_cast<bits>(0) - static_cast<bits>(take);
  bits out = (vb & mask) | (kb & ~mask);
  std::memcpy(&v, &out, sizeof(A));
  return v;
}

// PyTorch's rule for a window's maximum, visited in row-major order: a greater value, or a NaN,
// takes the place (the first of equal maxima stays, the last NaN wins).
template <class A>
void visit(A v, std::int64_t here, A& best, std::int64_t& best_at) {
  bool take = (v > best) | std::isunordered(v, v);
  best = select(take, v, best);
  best_at = select(take, here, best_at);
}

#if defined(__SSE2__)
/// Four 2x2 windows at once in fp32 (SSE2, every x86-64 has it), from output column `j` of the
/// rows `upper` and `lower`: the same rule as visit(), lane by lane.
void pool_four(const float* upper, const float* lower, std::int64_t j, std::int64_t here, std::int64_t w,
               float* out, std::int64_t* where) {
  auto deinterleave = [](const float* row, __m128& even, __m128& odd) {
    auto first = _mm_loadu_ps(row), second = _mm_loadu_ps(row + 4);
    even = _mm_shuffle_ps(first, second, _MM_SHUFFLE(2, 0, 2, 0));
    odd = _mm_shuffle_ps(first, second, _MM_SHUFFLE(3, 1, 3, 1));
  };
  __m128 values[4];
  deinterleave(upper + 2 * j, values[0], values[1]);
  deinterleave(lower + 2 * j, values[2], values[3]);
  auto best = values[0];
  auto code = _mm_setzero_si128();  // which of the four took the place: 0 1 (upper), 2 3 (lower)
  for (int k = 1; k < 4; ++k) {
    auto take = _mm_or_ps(_mm_cmpgt_ps(values[k], best), _mm_cmpunord_ps(values[k], values[k]));
    best = _mm_or_ps(_mm_and_ps(take, values[k]), _mm_andnot_ps(take, best));
    auto mask = _mm_castps_si128(take);
    code = _mm_or_si128(_mm_and_si128(mask, _mm_set1_epi32(k)), _mm_andnot_si128(mask, code));
  }
  _mm_storeu_ps(out + j, best);
  if (where == nullptr)
    return;
  alignas(16) std::int32_t codes[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(codes), code);
  for (int lane = 0; lane < 4; ++lane)
    where[j + lane] = here + 2 * lane + (codes[lane] & 1) + (codes[lane] >> 1) * w;
}
#endif

/// One plane's maxima (and their indices when `where` is not null).
template <class T>
void pool_plane(const T* in, std::int64_t h, std::int64_t w, T* out, std::int64_t* where,
                std::int64_t oh, std::int64_t ow, std::int64_t kernel, std::int64_t stride) {
  using acc = at::opmath_type<T>;
  for (std::int64_t i = 0; i < oh; ++i) {
    auto top = i * stride;
    std::int64_t j = 0;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, float>)
      if (kernel == 2 && stride == 2)  // the common window: four at a time
        for (; j + 4 <= ow; j += 4)
          pool_four(in + top * w, in + (top + 1) * w, j, top * w + 2 * j, w, out + i * ow,
                    where != nullptr ? where + i * ow : nullptr);
#endif
    for (; j < ow; ++j) {
      auto left = j * stride;
      auto best_at = top * w + left;
      acc best = static_cast<acc>(in[best_at]);
      for (std::int64_t r = top; r < top + kernel; ++r)
        for (std::int64_t c = left; c < left + kernel; ++c)
          visit(static_cast<acc>(in[r * w + c]), r * w + c, best, best_at);
      out[i * ow + j] = static_cast<T>(best);
      if (where != nullptr)
        where[i * ow + j] = best_at;
    }
  }
}

/// MaxPool2d as an autograd function: its forward pass max_pool_forward, its backward PyTorch's.
struct max_pool_function : torch::autograd::Function<max_pool_function> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, std::int64_t kernel, std::int64_t stride) {
    auto [out, indices] = max_pool_forward(x, kernel, stride, true);
    ctx->save_for_backward({x, indices});
    ctx->saved_data["kernel"] = kernel;
    ctx->saved_data["stride"] = stride;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    auto saved = ctx->get_saved_variables();
    auto kernel = ctx->saved_data["kernel"].toInt();
    auto stride = ctx->saved_data["stride"].toInt();
    auto grad = at::max_pool2d_with_indices_backward(grad_output[0], saved[0], {kernel, kernel}, {stride, stride},
                                                     {0, 0}, {1, 1}, false, saved[1]);
    return {grad, at::Tensor{}, at::Tensor{}};
  }
};

/// BatchNorm2d in training as an autograd function: its forward pass batch_norm_forward, its
/// backward libtorch's native_batch_norm_backward with what it saved. Inputs: x, weight, bias
/// (the three it differentiates), the running mean and variance (moved in place).
struct batch_norm_function : torch::autograd::Function<batch_norm_function> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                            const at::Tensor& running_mean, const at::Tensor& running_var, double momentum,
                            double eps) {
    auto r = batch_norm_forward(x, weight, bias, running_mean, running_var, momentum, eps);
    ctx->save_for_backward({x, weight, r.mean, r.invstd});
    ctx->saved_data["eps"] = eps;
    return r.out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    auto saved = ctx->get_saved_variables();
    auto [gx, gw, gb] = at::native_batch_norm_backward(
      grad_output[0], saved[0], saved[1], at::Tensor{}, at::Tensor{}, saved[2], saved[3], /*train=*/true,
      ctx->saved_data["eps"].toDouble(), {ctx->needs_input_grad(0), ctx->needs_input_grad(1), ctx->needs_input_grad(2)});
    return {gx, gw, gb, at::Tensor{}, at::Tensor{}, at::Tensor{}, at::Tensor{}};
  }
};

/// The sum of `n` floats in fp32 with four running sums (of `f(v)` for each value v).
template <class F>
double row_sum(const float* v, std::int64_t n, F f) {
  float s[4] = {0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k)
      s[k] += f(v[i + k]);
  for (; i < n; ++i)
    s[0] += f(v[i]);
  return static_cast<double>(s[0]) + s[1] + s[2] + s[3];
}

} // namespace

batch_norm_result batch_norm_forward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                     const at::Tensor& running_mean, const at::Tensor& running_var, double momentum,
                                     double eps) {
  auto n = x.size(0), c = x.size(1), plane = x.size(2) * x.size(3);
  auto count = static_cast<double>(n * plane);
  auto out = at::empty_like(x);
  auto mean = at::empty({c}, x.options());
  auto invstd = at::empty({c}, x.options());
  std::vector<double> var(static_cast<std::size_t>(c));
  const auto* in = x.data_ptr<float>();
  auto* to = out.data_ptr<float>();
  auto* m = mean.data_ptr<float>();
  auto* inv = invstd.data_ptr<float>();
  const float* w = weight.defined() ? weight.data_ptr<float>() : nullptr;
  const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
  at::parallel_for(0, c, 1, [&](std::int64_t begin, std::int64_t end) {
    for (auto ch = begin; ch < end; ++ch) {
      // Two passes for the statistics (the mean, then the squares about it: no cancellation),
      // each row of a plane in fp32, the rows in fp64; a third writes the output.
      double sum = 0.0;
      for (std::int64_t i = 0; i < n; ++i)
        sum += row_sum(in + (i * c + ch) * plane, plane, [](float v) { return v; });
      auto mu = static_cast<float>(sum / count);
      double squares = 0.0;
      for (std::int64_t i = 0; i < n; ++i)
        squares += row_sum(in + (i * c + ch) * plane, plane, [mu](float v) { return (v - mu) * (v - mu); });
      auto biased = squares / count;
      var[static_cast<std::size_t>(ch)] = biased;
      auto is = static_cast<float>(1.0 / std::sqrt(biased + eps));
      m[ch] = mu;
      inv[ch] = is;
      float scale = is * (w != nullptr ? w[ch] : 1.0F);
      float shift = (b != nullptr ? b[ch] : 0.0F) - mu * scale;
      for (std::int64_t i = 0; i < n; ++i) {
        const float* from = in + (i * c + ch) * plane;
        float* into = to + (i * c + ch) * plane;
        for (std::int64_t k = 0; k < plane; ++k)
          into[k] = from[k] * scale + shift;
      }
    }
  });
  if (running_mean.defined() && running_var.defined()) {
    at::NoGradGuard no_grad;
    auto unbiased = at::tensor(var, at::TensorOptions{}.dtype(at::kDouble)) * (count / std::max(count - 1.0, 1.0));
    running_mean.mul_(1.0 - momentum).add_(mean, momentum);
    running_var.mul_(1.0 - momentum).add_(unbiased.to(running_var.scalar_type()), momentum);
  }
  return {out, mean, invstd};
}

batch_norm2d_impl::batch_norm2d_impl(std::int64_t channels) {
  weight = register_parameter("weight", at::ones({channels}));
  bias = register_parameter("bias", at::zeros({channels}));
  running_mean = register_buffer("running_mean", at::zeros({channels}));
  running_var = register_buffer("running_var", at::ones({channels}));
  num_batches_tracked = register_buffer("num_batches_tracked", at::zeros({}, at::TensorOptions{}.dtype(at::kLong)));
}

at::Tensor batch_norm2d_impl::forward(const at::Tensor& x) {
  TORCH_CHECK(x.dim() == 4, "expected 4D input (got ", x.dim(), "D input)");
  if (!is_training())
    return at::batch_norm(x, weight, bias, running_mean, running_var, false, momentum_, eps_, true);
  {
    at::NoGradGuard no_grad;
    num_batches_tracked += 1;
  }
  auto fp32 = [](const at::Tensor& t) { return t.is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous(); };
  if (!fp32(x) || !fp32(weight) || !fp32(bias) || !fp32(running_mean) || !fp32(running_var))
    return at::batch_norm(x, weight, bias, running_mean, running_var, true, momentum_, eps_, true);
  if (at::GradMode::is_enabled() && (x.requires_grad() || weight.requires_grad() || bias.requires_grad()))
    return batch_norm_function::apply(x, weight, bias, running_mean, running_var, momentum_, eps_);
  return batch_norm_forward(x, weight, bias, running_mean, running_var, momentum_, eps_).out;
}

std::pair<at::Tensor, at::Tensor> max_pool_forward(const at::Tensor& x, std::int64_t kernel, std::int64_t stride,
                                                   bool indices) {
  auto n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  auto oh = (h - kernel) / stride + 1, ow = (w - kernel) / stride + 1;
  auto out = at::empty({n, c, oh, ow}, x.options());
  at::Tensor where;
  if (indices)
    where = at::empty({n, c, oh, ow}, x.options().dtype(at::kLong));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "max_pool_forward", [&] {
    const auto* in = x.data_ptr<scalar_t>();
    auto* to = out.data_ptr<scalar_t>();
    auto* index = indices ? where.data_ptr<std::int64_t>() : nullptr;
    // One task per run of planes, as many as the intra-op threads take.
    at::parallel_for(0, n * c, 16, [&](std::int64_t begin, std::int64_t end) {
      for (auto p = begin; p < end; ++p)
        pool_plane(in + p * h * w, h, w, to + p * oh * ow, index != nullptr ? index + p * oh * ow : nullptr, oh, ow,
                   kernel, stride);
    });
  });
  return {out, where};
}

at::Tensor layer_norm_impl::forward(const at::Tensor& x) {
  auto reduced = x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kHalf;
  return LayerNormImpl::forward(reduced ? x.to(at::kFloat) : x);
}

at::Tensor dropout_impl::forward(const at::Tensor& x) {
  if (!is_training() || p_ == 0.0)
    return x;
  // In fp32 and fp64, kept where a uniform draw falls below 1 - p: Bernoulli(1 - p), three times
  // as fast as bernoulli_ on the CPU in libtorch 1.13 (0.3 against 0.9 ms for the CNN example's
  // batch). A 16-bit draw would round up to 1 - p and keep too few: those use bernoulli_, which
  // draws in full precision.
  auto keep = at::empty_like(x);
  if (x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble)
    keep.uniform_(0.0, 1.0, gen_).lt_(1.0 - p_);
  else
    keep.bernoulli_(1.0 - p_, gen_);
  return x * keep / (1.0 - p_);
}

at::Tensor max_pool_impl::forward(const at::Tensor& x) {
  if (!ours(x))
    return torch::max_pool2d(x, kernel_, stride_);
  if (x.requires_grad() && at::GradMode::is_enabled())
    return max_pool_function::apply(x, kernel_, stride_);
  return max_pool_forward(x, kernel_, stride_, false).first;
}

} // namespace cdui::runtime::nodes
