// The Model's layers of cdui's own (runtime/nodes/layers.hpp). MaxPool2d against libtorch's
// max_pool2d_with_indices: the same maxima and indices bit for bit (ties, NaN and -inf included,
// fp32, fp64 and bf16), and the same input gradient through autograd. BatchNorm2d against
// torch::nn::BatchNorm2d: outputs, gradients and running statistics within fp32 rounding, the
// same names, eval mode the same. Dropout: the share it
// drops and the scale of what it keeps, in fp32 and bf16, the same masks for the same seed.
#include <boost/test/unit_test.hpp>

#include <limits>
#include <tuple>

#include <torch/torch.h>

#include "runtime/nodes/layers.hpp"

using cdui::runtime::nodes::batch_norm2d_impl;
using cdui::runtime::nodes::dropout_impl;
using cdui::runtime::nodes::max_pool_forward;
using cdui::runtime::nodes::max_pool_impl;

namespace {

/// Values with many ties (small integers), a few NaN and -inf, in `dtype`.
at::Tensor awkward(std::vector<std::int64_t> shape, at::ScalarType dtype, std::uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto x = at::randint(-3, 4, shape, gen, at::TensorOptions{}.dtype(at::kDouble));
  auto marks = at::rand(shape, gen, at::TensorOptions{}.dtype(at::kDouble));
  x.masked_fill_(marks < 0.02, std::numeric_limits<double>::quiet_NaN());
  x.masked_fill_(marks > 0.98, -std::numeric_limits<double>::infinity());
  return x.to(dtype);
}

} // namespace

BOOST_AUTO_TEST_SUITE(layers_test)

BOOST_AUTO_TEST_CASE(maxima_and_indices_are_libtorchs) {
  for (auto dtype : {at::kFloat, at::kDouble, at::kBFloat16})
    for (auto [kernel, stride] : {std::pair{2, 2}, std::pair{3, 1}, std::pair{3, 2}, std::pair{2, 3}})
      for (const auto& shape : {std::vector<std::int64_t>{4, 3, 28, 28}, std::vector<std::int64_t>{2, 5, 7, 9}}) {
        BOOST_TEST_CONTEXT(c10::toString(dtype) << " kernel " << kernel << " stride " << stride << " width " << shape[3]) {
          auto x = awkward(shape, dtype, static_cast<std::uint64_t>(kernel * 10 + stride + shape[3]));
          auto [want, want_at] = at::max_pool2d_with_indices(x, {kernel, kernel}, {stride, stride});
          auto [got, got_at] = max_pool_forward(x, kernel, stride, true);
          BOOST_TEST(got.sizes() == want.sizes());
          BOOST_TEST(torch::equal(got_at, want_at));
          // NaN != NaN: compare where they are, then the rest.
          BOOST_TEST(torch::equal(got.isnan(), want.isnan()));
          BOOST_TEST(torch::equal(got.nan_to_num(0.5), want.nan_to_num(0.5)));
          BOOST_TEST(!max_pool_forward(x, kernel, stride, false).second.defined());
          BOOST_TEST(torch::equal(max_pool_forward(x, kernel, stride, false).first.nan_to_num(0.5), want.nan_to_num(0.5)));
        }
      }
}

BOOST_AUTO_TEST_CASE(the_layer_trains_as_libtorchs_does) {
  auto x = at::randn({8, 4, 14, 14}, at::TensorOptions{}.dtype(at::kFloat));
  auto ours = x.clone().requires_grad_(true);
  auto theirs = x.clone().requires_grad_(true);
  max_pool_impl layer{2, 2};
  torch::nn::MaxPool2d reference{torch::nn::MaxPool2dOptions(2).stride(2)};
  auto weights = at::randn({8, 4, 7, 7});
  (layer.forward(ours) * weights).sum().backward();
  (reference->forward(theirs) * weights).sum().backward();
  BOOST_TEST(torch::equal(ours.grad(), theirs.grad()));
  // Without grad mode, and for a tensor it does not compute (channels last), the same values.
  at::NoGradGuard no_grad;
  BOOST_TEST(torch::equal(layer.forward(x), reference->forward(x)));
  auto nhwc = x.contiguous(at::MemoryFormat::ChannelsLast);
  BOOST_TEST(torch::equal(layer.forward(nhwc), reference->forward(x)));
}

BOOST_AUTO_TEST_CASE(batch_norm_trains_as_libtorchs_does) {
  torch::manual_seed(3);
  batch_norm2d_impl ours{6};
  torch::nn::BatchNorm2d theirs{6};
  {
    at::NoGradGuard no_grad;  // weights that are not ones and zeros
    for (auto* w : {&ours.weight, &theirs->weight})
      w->copy_(at::linspace(0.5, 2.0, 6));
    for (auto* b : {&ours.bias, &theirs->bias})
      b->copy_(at::linspace(-1.0, 1.0, 6));
  }
  std::vector<std::string> our_names, their_names;
  for (const auto& b : ours.named_parameters())
    our_names.push_back(b.key());
  for (const auto& b : ours.named_buffers())
    our_names.push_back(b.key());
  for (const auto& b : theirs->named_parameters())
    their_names.push_back(b.key());
  for (const auto& b : theirs->named_buffers())
    their_names.push_back(b.key());
  BOOST_TEST(our_names == their_names, "the same names in the same order, so saved models load either way");
  for (int step = 0; step < 3; ++step) {
    auto x = at::randn({8, 6, 5, 7}) * 3.0 + 10.0;  // an offset mean: the variance's pass must not cancel
    auto mine = x.clone().requires_grad_(true), other = x.clone().requires_grad_(true);
    auto weights = at::randn({8, 6, 5, 7});
    auto out = ours.forward(mine), expected = theirs->forward(other);
    BOOST_TEST(torch::allclose(out, expected, 1e-4, 1e-5));
    (out * weights).sum().backward();
    (expected * weights).sum().backward();
    BOOST_TEST(torch::allclose(mine.grad(), other.grad(), 1e-4, 1e-5));
    BOOST_TEST(torch::allclose(ours.weight.grad(), theirs->weight.grad(), 1e-4, 1e-4));
    BOOST_TEST(torch::allclose(ours.bias.grad(), theirs->bias.grad(), 1e-4, 1e-4));
    BOOST_TEST(torch::allclose(ours.running_mean, theirs->running_mean, 1e-5, 1e-6));
    BOOST_TEST(torch::allclose(ours.running_var, theirs->running_var, 1e-5, 1e-6));
    BOOST_TEST(ours.num_batches_tracked.item<std::int64_t>() == theirs->num_batches_tracked.item<std::int64_t>());
  }
  // A frozen norm (no gradient wanted) still moves its statistics; eval mode uses them.
  ours.weight.requires_grad_(false);
  ours.bias.requires_grad_(false);
  theirs->weight.requires_grad_(false);
  theirs->bias.requires_grad_(false);
  auto x = at::randn({4, 6, 3, 3});
  BOOST_TEST(torch::allclose(ours.forward(x), theirs->forward(x), 1e-4, 1e-5));
  BOOST_TEST(torch::allclose(ours.running_var, theirs->running_var, 1e-5, 1e-6));
  ours.eval();
  theirs->eval();
  BOOST_TEST(torch::allclose(ours.forward(x), theirs->forward(x), 1e-4, 1e-5));
}

BOOST_AUTO_TEST_CASE(dropout_drops_its_share_and_scales_the_rest) {
  for (auto dtype : {at::kFloat, at::kBFloat16})
    for (double p : {0.1, 0.25, 0.5}) {
      BOOST_TEST_CONTEXT(c10::toString(dtype) << " p " << p) {
        dropout_impl layer{p, at::make_generator<at::CPUGeneratorImpl>(7)};
        auto ones = at::ones({1000, 1000}, at::TensorOptions{}.dtype(dtype));
        auto out = layer.forward(ones).to(at::kDouble);
        // 10^6 draws: the dropped share's standard deviation is at most 0.0005.
        auto dropped = out.eq(0).to(at::kDouble).mean().item<double>();
        BOOST_TEST(std::abs(dropped - p) < 0.003, dropped);
        // What it keeps is scaled by 1 / (1 - p), so the mean stays 1.
        auto kept = out.masked_select(out.ne(0));
        BOOST_TEST(torch::allclose(kept, at::full_like(kept, 1.0 / (1.0 - p)), dtype == at::kBFloat16 ? 1e-2 : 1e-6));
        BOOST_TEST(std::abs(out.mean().item<double>() - 1.0) < 0.01);
        // The same seed draws the same masks; eval mode is the identity.
        dropout_impl again{p, at::make_generator<at::CPUGeneratorImpl>(7)};
        BOOST_TEST(torch::equal(again.forward(ones).to(at::kDouble), out));
        layer.eval();
        BOOST_TEST(torch::equal(layer.forward(ones), ones));
      }
    }
}

BOOST_AUTO_TEST_SUITE_END()
