#include "runtime/conv_memory.hpp"

namespace cdui::runtime {

namespace {

/// The values of one channel of a sample of this shape.
std::int64_t plane(const sample_shape& shape) {
  return elements(shape) / shape[0];
}

/// The im2col columns of libtorch's own convolution at batch `b`: none for a 1x1 kernel of stride
/// 1 without padding, which reads its input as it is.
std::int64_t im2col_bytes(const layer_plan& l, std::int64_t b, std::int64_t size) {
  if (l.kernel == 1 && l.stride == 1 && l.padding == 0)
    return 0;
  return b * l.in[0] * l.kernel * l.kernel * plane(l.out) * size;
}

/// Whether oneDNN's kernel reads the input in its blocked layout (copied there first): a 1x1
/// kernel, or one of `block` input channels or more; fewer channels through a larger kernel are
/// read as they are (its first-layer kernels).
bool reads_blocked(const layer_plan& l, std::int64_t block) {
  return l.kernel == 1 || l.in[0] >= block;
}

/// The weight (or its gradient) in oneDNN's blocked layout: output channels padded to the block,
/// input channels too where the input is read blocked, else in pairs in 16 bits.
std::int64_t blocked_weight(const layer_plan& l, std::int64_t block, bool reads_blocked_input, std::int64_t size) {
  auto in = reads_blocked_input ? padded(l.in[0], block) : size == half_bytes ? padded(l.in[0], 2) : l.in[0];
  return padded(l.out[0], block) * in * l.kernel * l.kernel * size;
}

/// libtorch's own kernel: the input's gradient, the weights', and for these the columns again.
conv_gradients im2col_backward(timeline& t, const layer_plan& l, std::int64_t b, const layer_gradients& c) {
  conv_gradients g;
  if (c.input)
    g.input = t.alloc(batch_elements(b, l.in) * c.in_size);
  g.weight = t.alloc(c.weight ? l.cast_parameters * c.out_size : 0);
  if (c.weight)
    t.spike(im2col_bytes(l, b, c.in_size));
  return g;
}

} // namespace

bool onednn_convolution(const layer_plan& l, std::int64_t b, bool half, bool one_thread) {
  if (half)
    return true;
  bool not_small_1x1 = l.stride > 1 || b >= onednn_1x1_batch || l.kernel != 1 || !one_thread;
  bool not_small_single = l.kernel > onednn_single_kernel || b > 1 || b * elements(l.in) > onednn_single_elements;
  return not_small_1x1 && not_small_single;
}

// oneDNN's kernels (channels padded to the timeline's block: 16 with AVX-512, 8 with AVX2): the
// input copied to the blocked layout where the kernel reads it so, the weight blocked, the output
// written blocked, then copied to the dense one. In 16 bits (AVX-512 BF16) everything is 16-bit,
// and a 1x1 kernel adds an fp32 accumulator of one sample's output.
timeline::id conv_output(timeline& t, const layer_plan& l, std::int64_t b, bool half) {
  auto size = half ? half_bytes : float_bytes;
  if (t.cuda())  // cuDNN writes the output as it is; its workspace is the estimate's cuda_workspace
    return t.alloc(batch_elements(b, l.out) * size);
  if (!onednn_convolution(l, b, half, t.one_thread())) {
    // libtorch's own: its im2col columns, then the output.
    auto columns = t.alloc(im2col_bytes(l, b, size));
    auto out = t.alloc(batch_elements(b, l.out) * size);
    t.drop(columns);
    return out;
  }
  auto block = t.conv_block();
  auto reorder = reads_blocked(l, block);
  auto accumulator = half && l.kernel == 1 ? plane(l.out) * padded(l.out[0], block) * float_bytes : 0;
  auto written = blocked(b, l.out, block) * size;
  t.spike(accumulator + (reorder ? blocked(b, l.in, block) * size : 0) + blocked_weight(l, block, reorder, size)
          + written);
  auto out = t.alloc(batch_elements(b, l.out) * size);
  t.spike(written);
  return out;
}

// libtorch 1.13 calls oneDNN twice: for the input's gradient (blocked, from blocked copies of the
// output's gradient and of the weight, which are let go before the dense copy is made), then for
// the weights' (from another blocked copy of the output's gradient and one of the input, into a
// blocked gradient, then dense). The first layer's kernel (one input channel, a larger kernel)
// reads the input as it is, and in 16 bits the output's gradient too; in fp32 a kernel that reads
// a few channels as they are takes them for the weights' gradient in blocks of 8.
conv_gradients conv_backward(timeline& t, const layer_plan& l, std::int64_t b, const layer_gradients& c) {
  auto half = c.in_size == half_bytes;
  if (t.cuda()) {  // cuDNN: the input's gradient, then the weights', with no copies
    conv_gradients g;
    if (c.input)
      g.input = t.alloc(batch_elements(b, l.in) * c.in_size);
    g.weight = t.alloc(c.weight ? l.cast_parameters * c.out_size : 0);
    return g;
  }
  if (!onednn_convolution(l, b, half, t.one_thread()))
    return im2col_backward(t, l, b, c);
  auto block = t.conv_block();
  auto reorder = reads_blocked(l, block);
  auto dst_bytes = blocked(b, l.out, block) * c.out_size;
  conv_gradients g;
  if (c.input) {
    auto dst = t.alloc(dst_bytes);
    auto weight = t.alloc(blocked_weight(l, block, true, c.out_size));
    auto src = t.alloc(blocked(b, l.in, block) * c.in_size);
    if (half && l.kernel == 1)
      t.spike(plane(l.in) * padded(l.in[0], block) * float_bytes);
    t.drop(weight);
    t.drop(dst);
    g.input = t.alloc(batch_elements(b, l.in) * c.in_size);
    t.drop(src);
  }
  if (!c.weight) {
    g.weight = t.alloc(0);
    return g;
  }
  auto first = l.in[0] == 1 && l.kernel > 1;
  auto dst = half && first ? timeline::none : t.alloc(dst_bytes);
  auto src_block = reorder ? block : half || first ? 0 : 8;
  auto src = src_block > 0 ? t.alloc(blocked(b, l.in, src_block) * c.in_size) : timeline::none;
  auto weight = t.alloc(blocked_weight(l, block, reorder, c.out_size));
  t.drop(src);
  t.drop(dst);
  g.weight = t.alloc(l.cast_parameters * c.out_size);
  t.drop(weight);
  return g;
}

} // namespace cdui::runtime
