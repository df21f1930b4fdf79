// The estimate's simulated allocator and its rules for 16-bit matrix products
// (runtime/kernel_memory.*), against what the counting allocator measured for oneDNN's products
// alone (at::linear and the two products of its backward, bf16, one thread, AVX-512 BF16).
#include <boost/test/unit_test.hpp>

#include "runtime/kernel_memory.hpp"

using namespace cdui::runtime;

BOOST_AUTO_TEST_SUITE(kernel_memory_test)

BOOST_AUTO_TEST_CASE(the_timeline_holds_what_is_live_and_its_peak) {
  timeline t;
  auto a = t.alloc(100);
  auto b = t.hold(a);
  t.spike(50);
  BOOST_TEST(t.peak() == 150);
  t.drop(a);
  auto c = t.alloc(10);
  BOOST_TEST(t.peak() == 150);
  t.drop(b);  // the last holder lets it go
  t.spike(130);
  BOOST_TEST(t.peak() == 150);
  t.spike(141);
  BOOST_TEST(t.peak() == 151);
  // Two parts of a gradient are summed into a new tensor; a missing part is no sum.
  auto sum = accumulate(t, c, t.alloc(10), 10);
  BOOST_TEST(sum != c);
  BOOST_TEST(accumulate(t, timeline::none, sum, 10) == sum);
  BOOST_TEST(accumulate(t, sum, timeline::none, 10) == sum);
}

BOOST_AUTO_TEST_CASE(small_products_have_no_scratch) {
  // m k n <= 16^3: libtorch's own kernel.
  BOOST_TEST(matmul_scratch(128, 32, 1, false) == 0);
  BOOST_TEST(matmul_scratch(2, 16, 128, false) == 0);
  BOOST_TEST(matmul_scratch(128, 52, 1, false) == 8960);
}

BOOST_AUTO_TEST_CASE(a_product_packs_its_right_hand_matrix) {
  // x (m x k) by a weight's transpose: a panel of k (padded to 32) by 64 columns, whatever n is.
  BOOST_TEST(matmul_scratch(128, 55, 64, false) == 8960);
  BOOST_TEST(matmul_scratch(2, 20, 512, false) == 4864);
  BOOST_TEST(matmul_scratch(7, 100, 10, false) == 17152);
  // Past 512 of k: a panel of 512 (1024 past 1024) and an fp32 accumulator.
  BOOST_TEST(matmul_scratch(2, 784, 64, false) == 66944);
  BOOST_TEST(matmul_scratch(128, 784, 10, false) == 71552);
  BOOST_TEST(matmul_scratch(2, 2048, 64, false) == 132480);
  BOOST_TEST(matmul_scratch(512, 1024, 64, false) == 131968);
}

BOOST_AUTO_TEST_CASE(a_weights_gradient_copies_the_transposed_output_gradient) {
  // The output's gradient (batch x n), read transposed: copied in blocks of up to 256 rows.
  BOOST_TEST(matmul_scratch(64, 128, 55, true) == 33664);   // n 64, batch 128, 55 inputs
  BOOST_TEST(matmul_scratch(300, 2, 100, true) == 14592);   // n 300: two blocks of 150
  BOOST_TEST(matmul_scratch(512, 128, 16, true) == 82816);  // n 512: blocks of 256
  BOOST_TEST(matmul_scratch(64, 128, 1, true) == 17536);    // one input: one row
}

BOOST_AUTO_TEST_SUITE_END()
