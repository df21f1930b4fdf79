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

} // namespace

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
