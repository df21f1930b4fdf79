#include "runtime/kernel_memory.hpp"

#include <algorithm>

#include "runtime/conv_memory.hpp"

namespace cdui::runtime {

timeline::~timeline() {
  if (cuda_ == nullptr)
    return;
  for (std::size_t i = 0; i < refs_.size(); ++i)
    if (refs_[i] > 0)
      cuda_->free(blocks_[i]);
}

timeline::id timeline::alloc(std::int64_t bytes) {
  sizes_.push_back(bytes);
  refs_.push_back(1);
  if (cuda_ != nullptr)
    blocks_.push_back(cuda_->alloc(bytes));
  live_ += bytes;
  peak_ = std::max(peak_, live_);
  return static_cast<id>(sizes_.size() - 1);
}

void timeline::spike(std::int64_t bytes, std::int64_t count) {
  peak_ = std::max(peak_, live_ + bytes * count);
  if (cuda_ == nullptr)
    return;
  std::vector<cuda_allocator_model::id> held;
  for (std::int64_t i = 0; i < count; ++i)
    held.push_back(cuda_->alloc(bytes));
  for (auto b : held)
    cuda_->free(b);
}

void timeline::cpu_scratch(std::int64_t bytes) {
  if (cuda_ == nullptr)
    spike(bytes);
}

timeline::id timeline::hold(id t) {
  if (t != none)
    ++refs_[static_cast<std::size_t>(t)];
  return t;
}

void timeline::drop(id t) {
  if (t != none && --refs_[static_cast<std::size_t>(t)] == 0) {
    live_ -= sizes_[static_cast<std::size_t>(t)];
    if (cuda_ != nullptr)
      cuda_->free(blocks_[static_cast<std::size_t>(t)]);
  }
}

void timeline::drop_all(std::vector<id>& ts) {
  for (auto t : ts)
    drop(t);
  ts.clear();
}

std::int64_t batch_elements(std::int64_t b, const sample_shape& shape) {
  return b * elements(shape);
}

std::int64_t padded(std::int64_t c, std::int64_t to) {
  return (c + to - 1) / to * to;
}

std::int64_t blocked(std::int64_t b, const sample_shape& shape, std::int64_t block) {
  auto c = shape[0];
  return b * padded(c, block) * (elements(shape) / c);
}

timeline::id layer_input(timeline& t, bool half, timeline::id chain, std::int64_t& chain_size,
                         std::int64_t elements_in) {
  if (!half || chain_size == half_bytes)
    return t.hold(chain);
  chain_size = half_bytes;
  return t.alloc(elements_in * half_bytes);
}

timeline::id output_in_float(timeline& t, timeline::id chain, std::int64_t chain_size, std::int64_t outputs) {
  if (chain_size != half_bytes)
    return chain;
  auto full = t.alloc(outputs * float_bytes);
  t.drop(chain);
  return full;
}

timeline::id accumulate(timeline& t, timeline::id first, timeline::id second, std::int64_t bytes) {
  if (first == timeline::none)
    return second;
  if (second == timeline::none)
    return first;
  auto sum = t.alloc(bytes);
  t.drop(first);
  t.drop(second);
  return sum;
}

std::int64_t matmul_scratch(std::int64_t m, std::int64_t k, std::int64_t n, bool left_transposed) {
  if (m * k * n <= onednn_matmul_min_size)
    return 0;
  auto panel = k <= 512 ? padded(k, 32) : k <= 1024 ? 512 : 1024;
  auto bytes = 768 + panel * 64 * half_bytes;
  if (k > 512 || (left_transposed && k == 512))
    bytes += (k > 512 ? 128 : 0) + std::min<std::int64_t>(m, n == 1 ? 64 : 256) * std::min<std::int64_t>(n, 64) * float_bytes;
  if (left_transposed) {
    auto blocks = (m + 255) / 256;
    bytes += 128 + (n == 1 ? 1 : (m + blocks - 1) / blocks) * panel * half_bytes;
  }
  return bytes;
}

std::int64_t norm_statistics(const layer_plan& l, std::int64_t b) {
  if (l.type == "LayerNorm")
    return 2 * b * (elements(l.in) / l.in.back()) * float_bytes;
  return 2 * l.in[0] * float_bytes;
}

timeline::id no_grad_layer(timeline& t, timeline::id chain, std::int64_t& chain_size, std::vector<timeline::id>& cache,
                           const layer_plan& l, std::int64_t b, const no_grad_run& run) {
  auto e_in = batch_elements(b, l.in), e_out = batch_elements(b, l.out);
  timeline::id out = timeline::none;
  if (l.type == "Dropout" && run.train_mode && l.p > 0) {
    auto mask = t.alloc(e_in * chain_size);
    auto product = t.alloc(e_in * chain_size);
    out = t.alloc(e_in * chain_size);
    t.drop(mask);
    t.drop(product);
  } else if (l.type == "Flatten" || l.type == "Dropout") {
    out = t.hold(chain);
  } else if (l.type == "Linear" || l.type == "Conv2d") {
    auto used = layer_input(t, run.half, chain, chain_size, e_in);
    auto size = run.half ? half_bytes : float_bytes;
    auto copy = run.half ? t.alloc(l.cast_parameters * half_bytes) : timeline::none;
    out = l.type == "Conv2d" ? conv_output(t, l, b, run.half) : t.alloc(e_out * size);
    if (l.type == "Linear" && run.half)
      t.cpu_scratch(matmul_scratch(b, l.in[0], l.out[0], false));
    if (run.cached && run.weight_trains)
      cache.push_back(copy);
    else
      t.drop(copy);
    if (run.lora_rank > 0) {
      auto rank = run.lora_rank, in = l.in[0], outf = l.out[0];
      if (run.half) {
        // The adapters' copies: cached, or each for its product alone.
        auto a = t.alloc(rank * in * half_bytes);
        t.spike(outf * rank * half_bytes);
        if (run.cached) {
          cache.push_back(a);
          cache.push_back(t.alloc(outf * rank * half_bytes));
        } else {
          t.drop(a);
        }
      }
      // W x + b, x A^T, its product with B and that times the scale live until the sum is made.
      std::vector<timeline::id> parts{out, t.alloc(b * rank * size), t.alloc(b * outf * size),
                                      t.alloc(b * outf * size)};
      out = t.alloc(b * outf * size);
      t.drop_all(parts);
    }
    t.drop(used);
  } else if (l.type == "LayerNorm" && chain_size == half_bytes) {
    auto full = t.alloc(e_in * float_bytes);  // normalised in fp32, as in training
    chain_size = float_bytes;
    out = t.alloc(e_out * float_bytes + norm_statistics(l, b));
    t.drop(full);
  } else {
    out = t.alloc(e_out * chain_size + (l.type == "LayerNorm" ? norm_statistics(l, b) : 0));
  }
  t.drop(chain);
  return out;
}

timeline::id lora_backward(timeline& t, const layer_plan& l, std::int64_t rank, const layer_gradients& c,
                           std::int64_t b, const lora_held& held, std::vector<timeline::id>& temporaries) {
  auto in = l.in[0], out = l.out[0];
  // The scale's product; the output's gradient has no other user left.
  auto scaled = t.alloc(b * out * c.out_size);
  t.drop(held.gradient);
  // The product with B: B's gradient and x A^T's, then x A^T and the scaled gradient let go.
  auto gb = t.alloc(out * rank * c.out_size);
  auto gax = t.alloc(b * rank * c.out_size);
  t.drop(scaled);
  t.drop(held.product);
  t.drop(gb);
  // x A^T: A's gradient and x's, then x A^T's gradient and x let go.
  temporaries.push_back(t.alloc(rank * in * c.out_size));
  auto gin = c.input ? t.alloc(b * in * c.in_size) : timeline::none;
  t.drop(gax);
  t.drop(held.input);
  if (c.out_size == half_bytes)
    t.spike((rank * in + out * rank) * float_bytes);
  return gin;
}

} // namespace cdui::runtime
