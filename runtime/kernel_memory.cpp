#include "runtime/kernel_memory.hpp"

#include <algorithm>

namespace cdui::runtime {

namespace {

/// Whether a 1x1 convolution reads its input in the blocked layout: in fp32, and in 16 bits for a
/// few output channels (measured: 1 does, 16 do not).
bool reorders_input(const layer_plan& l, bool half) {
  return l.kernel == 1 && (!half || l.out[0] < 8);
}

} // namespace

timeline::id timeline::alloc(std::int64_t bytes) {
  sizes_.push_back(bytes);
  refs_.push_back(1);
  live_ += bytes;
  peak_ = std::max(peak_, live_);
  return static_cast<id>(sizes_.size() - 1);
}

void timeline::spike(std::int64_t bytes) {
  peak_ = std::max(peak_, live_ + bytes);
}

timeline::id timeline::hold(id t) {
  if (t != none)
    ++refs_[static_cast<std::size_t>(t)];
  return t;
}

void timeline::drop(id t) {
  if (t != none && --refs_[static_cast<std::size_t>(t)] == 0)
    live_ -= sizes_[static_cast<std::size_t>(t)];
}

void timeline::drop_all(std::vector<id>& ts) {
  for (auto t : ts)
    drop(t);
  ts.clear();
}

std::int64_t batch_elements(std::int64_t b, const sample_shape& shape) {
  return b * elements(shape);
}

std::int64_t conv_block(bool avx512) {
  return avx512 ? 16 : 8;
}

std::string unmeasured_16_bit_kernels(const std::string& loop_id, const std::string& precision,
                                      const std::string& device) {
  return "TrainingLoop '" + loop_id + "' trains in " + precision + " on " + device
         + ", whose kernels here are oneDNN's without AVX-512: the estimate's rules for their 16-bit "
           "buffers were measured on AVX-512 kernels, and these allocate otherwise";
}

std::int64_t blocked(std::int64_t b, const sample_shape& shape, std::int64_t block) {
  auto c = shape[0];
  return b * ((c + block - 1) / block * block) * (elements(shape) / c);
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
  auto sum = t.alloc(bytes);
  t.drop(first);
  t.drop(second);
  return sum;
}

std::int64_t gemm_scratch(std::int64_t k, std::int64_t n) {
  return k * ((n + 63) / 64 * 64) * half_bytes;
}

std::int64_t norm_statistics(const layer_plan& l, std::int64_t b) {
  if (l.type == "LayerNorm")
    return 2 * b * (elements(l.in) / l.in.back()) * float_bytes;
  return 2 * l.in[0] * float_bytes;
}

// Its input copied to the blocked layout (channels padded to the timeline's block: 16 with
// AVX-512, 8 with AVX2) when the kernel wants it so (a
// 1x1 kernel as above; 16 or more channels in fp32, and a number of them not a multiple of 16 in
// 16 bits), the output written blocked, the input's copy let go, then the blocked output copied
// to the dense one. Under 16-bit autocast the blocked output is as large as fp32's once the layer
// has 8 channels in and out.
timeline::id conv_output(timeline& t, const layer_plan& l, std::int64_t b, bool half) {
  auto size = half ? half_bytes : float_bytes;
  auto block = t.conv_block();
  auto reorder = reorders_input(l, half) || (l.in[0] >= block && (!half || l.in[0] % block != 0));
  auto written = blocked(b, l.out, block) * (!half || (l.in[0] >= 8 && l.out[0] >= 8) ? float_bytes : half_bytes);
  t.spike(written + (reorder ? blocked(b, l.in, block) * size : 0));
  auto out = t.alloc(batch_elements(b, l.out) * size);
  t.spike(written);
  return out;
}

timeline::id no_grad_layer(timeline& t, timeline::id chain, std::int64_t& chain_size, std::vector<timeline::id>& cache,
                           const layer_plan& l, bool weight_trains, std::int64_t lora_rank, std::int64_t b,
                           bool half, bool train_mode) {
  auto e_in = batch_elements(b, l.in), e_out = batch_elements(b, l.out);
  timeline::id out = timeline::none;
  if (l.type == "Dropout" && train_mode && l.p > 0) {
    auto mask = t.alloc(e_in * chain_size);
    auto product = t.alloc(e_in * chain_size);
    out = t.alloc(e_in * chain_size);
    t.drop(mask);
    t.drop(product);
  } else if (l.type == "Flatten" || l.type == "Dropout") {
    out = t.hold(chain);
  } else if (l.type == "Linear" || l.type == "Conv2d") {
    auto used = layer_input(t, half, chain, chain_size, e_in);
    auto size = half ? half_bytes : float_bytes;
    auto copy = half ? t.alloc(l.cast_parameters * half_bytes) : timeline::none;
    out = l.type == "Conv2d" ? conv_output(t, l, b, half) : t.alloc(e_out * size);
    if (weight_trains)
      cache.push_back(copy);
    else
      t.drop(copy);
    if (lora_rank > 0) {
      auto in = l.in[0], outf = l.out[0];
      if (half) {
        cache.push_back(t.alloc(lora_rank * in * half_bytes));
        cache.push_back(t.alloc(outf * lora_rank * half_bytes));
      }
      // W x + b, x A^T, its product with B and that times the scale live until the sum is made.
      std::vector<timeline::id> parts{out, t.alloc(b * lora_rank * size), t.alloc(b * outf * size),
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

// oneDNN works on copies in its blocked layout (channels padded to the timeline's block: 16 with
// AVX-512, 8 with AVX2): of the output's gradient,
// and of the input when it computes the input's gradient or a 1x1 kernel reads it blocked (the
// first layer's kernel reads its plain input). The weights' gradient comes first; of the two copies
// the larger lives on while the input's dense gradient is made. From 16 input channels on (unless
// a stride-1 layer doubles them) the input's gradient is computed from a second blocked copy of the
// output's gradient; a 1x1 kernel over fewer channels computes it into a buffer of its own first.
timeline::id conv_backward(timeline& t, const layer_plan& l, std::int64_t b, const layer_gradients& c,
                           std::vector<timeline::id>& temporaries, timeline::id& gin) {
  auto dst_bytes = blocked(b, l.out, t.conv_block()) * c.out_size;
  auto src_bytes = c.weight && (c.input || reorders_input(l, c.in_size == half_bytes))
                     ? blocked(b, l.in, t.conv_block()) * c.in_size
                     : 0;
  auto dst = t.alloc(dst_bytes);
  auto weights = t.alloc(c.weight ? l.cast_parameters * c.out_size : 0);
  auto src = src_bytes > 0 ? t.alloc(src_bytes) : timeline::none;
  t.drop(src_bytes > dst_bytes ? dst : src);
  temporaries.push_back(src_bytes > dst_bytes ? src : dst);
  if (c.input) {
    auto e_in = batch_elements(b, l.in);
    auto second = l.in[0] >= t.conv_block() && (l.stride > 1 || l.out[0] < 2 * l.in[0]) ? t.alloc(dst_bytes)
                  : l.kernel == 1 && l.in[0] < t.conv_block()                             ? t.alloc(e_in * c.in_size)
                                                                              : timeline::none;
    gin = t.alloc(e_in * c.in_size);
    t.drop(second);
  }
  return weights;
}

timeline::id lora_backward(timeline& t, const layer_plan& l, std::int64_t rank, const layer_gradients& c,
                           std::int64_t b) {
  auto in = l.in[0], out = l.out[0];
  auto scaled = t.alloc(b * out * c.out_size);
  t.spike(out * rank * c.out_size);  // B's gradient, accumulated
  auto gax = t.alloc(b * rank * c.out_size);
  t.drop(scaled);
  t.spike(rank * in * c.out_size);  // A's gradient
  auto gin = c.input ? t.alloc(b * in * c.in_size) : timeline::none;
  t.drop(gax);
  if (c.out_size == half_bytes)
    t.spike((rank * in + out * rank) * float_bytes);
  return gin;
}

} // namespace cdui::runtime
