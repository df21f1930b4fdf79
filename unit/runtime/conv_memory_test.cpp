// What the estimate counts for a convolution (runtime/conv_memory.*): which kernel libtorch 1.13
// picks, and each kernel's buffers against what the counting allocator measured for the same
// convolution alone (at::conv2d forward, and backward with the input's gradient or both, on one
// thread of this project's AVX-512 BF16 CPU).
#include <boost/test/unit_test.hpp>

#include "runtime/conv_memory.hpp"

using namespace cdui::runtime;
using nlohmann::json;

namespace {

/// Conv2d of `out` channels, `k`x`k`, over [in, size, size].
layer_plan conv(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride, std::int64_t padding,
                std::int64_t size) {
  json l{{"type", "Conv2d"}, {"out_channels", out}, {"kernel_size", k}, {"stride", stride}, {"padding", padding}};
  return std::get<layer_plan>(plan_layer(l, {in, size, size}, "conv"));
}

/// The most the forward pass holds at batch `b`, its output included.
std::int64_t forward_peak(const layer_plan& l, std::int64_t b, bool half, bool one_thread = false) {
  timeline t{16, one_thread};
  conv_output(t, l, b, half);
  return t.peak();
}

/// The most the backward pass allocates at batch `b`, its gradients included.
std::int64_t backward_peak(const layer_plan& l, std::int64_t b, bool half, bool weight) {
  auto size = half ? half_bytes : float_bytes;
  timeline t{16, false};
  conv_backward(t, l, b, {size, size, weight, true});
  return t.peak();
}

} // namespace

BOOST_AUTO_TEST_SUITE(conv_memory_test)

BOOST_AUTO_TEST_CASE(libtorch_keeps_small_1x1_convolutions_on_one_thread_for_itself) {
  auto one = conv(1, 8, 1, 1, 0, 28), three = conv(1, 8, 3, 1, 1, 28), strided = conv(8, 8, 1, 2, 0, 28);
  BOOST_TEST(!onednn_convolution(one, 7, false, true));  // a 1x1 kernel at batch 7 on one thread
  BOOST_TEST(onednn_convolution(one, 16, false, true));  // ... not from batch 16 on
  BOOST_TEST(onednn_convolution(one, 7, false, false));  // ... nor on two threads
  BOOST_TEST(onednn_convolution(strided, 7, false, true));
  BOOST_TEST(onednn_convolution(three, 7, false, true));
  BOOST_TEST(!onednn_convolution(three, 1, false, false));  // one sample of 784 values through 3x3
  BOOST_TEST(onednn_convolution(one, 7, true, true));       // 16 bits: always oneDNN
  // libtorch's own: its output alone for a 1x1 kernel (its columns are the input), im2col's
  // columns beside it otherwise.
  BOOST_TEST(forward_peak(one, 7, false, true) == 7 * 8 * 784 * 4);
  timeline t{16, true};
  auto columns = 1 * 1 * 9 * 784 * 4;
  conv_output(t, conv(1, 8, 3, 1, 1, 28), 1, false);
  BOOST_TEST(t.peak() == columns + 8 * 784 * 4);
}

BOOST_AUTO_TEST_CASE(onednn_reads_and_writes_blocked_copies) {
  // fp32, batch 16, 16 -> 32 channels, 3x3 of stride 2 over 14x14: measured 319,488 (the input
  // blocked, the weight blocked, the output blocked).
  BOOST_TEST(forward_peak(conv(16, 32, 3, 2, 1, 14), 16, false) == 319488);
  // fp32, batch 7, 8 -> 32, 5x5 over 28x28: 8 channels are read as they are; measured 1,404,928.
  BOOST_TEST(forward_peak(conv(8, 32, 5, 1, 2, 28), 7, false) == 1404928);
  // bf16 (AVX-512 BF16): 16-bit blocks; measured 420,032 and (a 1x1 kernel, with its fp32
  // accumulator of one sample's output) 314,912: a few hundred bytes of scratch are not counted.
  BOOST_TEST(forward_peak(conv(24, 24, 3, 1, 1, 14), 16, true) == 420032 - 192);
  BOOST_TEST(forward_peak(conv(32, 8, 1, 1, 0, 14), 16, true) == 314912 - 288);
}

BOOST_AUTO_TEST_CASE(the_backward_computes_the_input_gradient_then_the_weights) {
  auto strided = conv(16, 32, 3, 2, 1, 14);
  // The input's gradient alone (a frozen weight): measured 401,408 in fp32, 200,704 in bf16.
  BOOST_TEST(backward_peak(strided, 16, false, false) == 401408);
  BOOST_TEST(backward_peak(strided, 16, true, false) == 200704);
  // Both: measured 520,320 in fp32 (the bias gradient's 128 bytes are not counted).
  BOOST_TEST(backward_peak(strided, 16, false, true) == 520320 - 128);
  // bf16, batch 7, 8 -> 32, 5x5: measured 552,448, set by the input's gradient.
  BOOST_TEST(backward_peak(conv(8, 32, 5, 1, 2, 28), 7, true, true) == 552448);
}

BOOST_AUTO_TEST_SUITE_END()
