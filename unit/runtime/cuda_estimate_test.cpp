// The static estimate on a CUDA card (runtime/estimate.hpp, runtime/cuda_terms.hpp): every tensor
// through the caching allocator's model, CUDA's kernels in place of the CPU's, and the workspaces.
#include <boost/test/unit_test.hpp>

#include "runtime/cuda_allocator_model.hpp"
#include "runtime/cuda_terms.hpp"
#include "unit/runtime/estimate_helpers.hpp"

using namespace cdui;

namespace {

constexpr std::int64_t mib = std::int64_t{1} << 20;

using test::estimate;
using test::term;

test::sized_graph mlp(int width) {
  test::sized_graph g;
  g.width = width;
  g.batch = 16;
  return g;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_estimate_test)

BOOST_AUTO_TEST_CASE(on_cuda_the_figure_is_whole_segments_of_the_caching_allocator_and_the_workspaces) {
  auto doc = test::sized_graph_json(mlp(100));
  auto cpu = estimate(doc);
  auto cuda = estimate(doc, {"cuda:0", 2});
  BOOST_REQUIRE(!cuda.is_rough());
  // An MLP's tensors are the same on either device; what CUDA adds is the allocator's and the
  // libraries'.
  BOOST_TEST(cuda.total_without_cuda() == cpu.total());
  BOOST_TEST(term(cuda, "cuda_workspace") == 128 * mib);
  BOOST_TEST(term(cuda, "allocator_reserve") > 0);
  // What the allocator reserves is segments: every tensor here is under 1 MiB, so 2 MiB ones.
  auto reserved = cuda.total() - term(cuda, "cuda_workspace");
  BOOST_TEST(reserved % (2 * mib) == 0, reserved);
  BOOST_TEST(reserved >= cpu.total());
  BOOST_TEST(cuda.terms[cuda.terms.size() - 2].detail.find(std::to_string(reserved / (2 * mib)) + " segments")
               != std::string::npos, cuda.terms[cuda.terms.size() - 2].detail);
  BOOST_TEST(cuda.cards == 2);
  BOOST_TEST(runtime::to_json(cuda)["per_card_bytes"].get<std::int64_t>() == cuda.total());
}

BOOST_AUTO_TEST_CASE(a_tensor_past_10_mib_costs_its_own_segment_rounded_to_2_mib) {
  // Linear(784 -> 4096): a weight of 12.25 MiB takes a segment of 14 MiB, and so do its
  // gradient and Adam's two states: 7 MiB more than they hold, whatever the rest does.
  auto cuda = estimate(test::sized_graph_json(mlp(4096)), {"cuda:0", 1});
  BOOST_REQUIRE(!cuda.is_rough());
  BOOST_TEST(term(cuda, "allocator_reserve") >= 4 * (14 * mib - 784 * 4096 * 4), term(cuda, "allocator_reserve"));
  auto reserved = cuda.total() - term(cuda, "cuda_workspace");
  BOOST_TEST(reserved % (2 * mib) == 0, reserved);
}

BOOST_AUTO_TEST_CASE(the_model_keeps_its_parameters_gradients_and_optimizer_state_as_tensors_of_their_own) {
  // Linear(784 -> 100), ReLU, Linear(100 -> 10): weight, bias, weight, bias; Adam's two states.
  std::vector<runtime::layer_plan> layers(3);
  layers[0] = {"Linear", {784}, {100}, 100, 0, 1, 0, true, 0.5, 784 * 100 + 100, 784 * 100 + 100, 0, 0};
  layers[1] = {"ReLU", {100}, {100}};
  layers[2] = {"Linear", {100}, {10}, 10, 0, 1, 0, true, 0.5, 100 * 10 + 10, 100 * 10 + 10, 0, 0};
  std::vector<std::int64_t> params{784 * 100 * 4, 100 * 4, 100 * 10 * 4, 10 * 4};
  auto all = runtime::persistent_tensors(layers, {}, 2);
  std::vector<std::int64_t> expected = params;                  // the parameters
  expected.insert(expected.end(), params.begin(), params.end());  // their gradients
  for (auto p : params)                                          // Adam's exp_avg, exp_avg_sq each
    expected.insert(expected.end(), {p, p});
  BOOST_TEST(all == expected);
  // The first layer frozen: no gradient or state for it; plain SGD: no state at all.
  std::vector<runtime::layer_training> frozen{{false, false, 0}, {}, {}};
  auto some = runtime::persistent_tensors(layers, frozen, 0);
  BOOST_TEST((some == std::vector<std::int64_t>{784 * 100 * 4, 100 * 4, 100 * 10 * 4, 10 * 4, 100 * 10 * 4, 10 * 4}));
}

BOOST_AUTO_TEST_CASE(a_convolution_on_cuda_has_no_cpu_layouts_or_scratch) {
  // One input channel: oneDNN on the CPU pads it to its block (and copies the weights blocked);
  // cuDNN reads it as it is. Both count the same tensors autograd keeps.
  auto g = mlp(16);
  g.cnn = true;
  g.batch = 256;
  g.val_batch = 16;
  auto doc = test::sized_graph_json(g);
  auto cpu = estimate(doc, {"cpu", 1, runtime::cpu_kernels::avx512_bf16});
  auto cuda = estimate(doc, {"cuda:0", 1});
  BOOST_REQUIRE(!cuda.is_rough());
  BOOST_TEST(cpu.activations_from == "training step");
  BOOST_TEST(term(cuda, "activations") < term(cpu, "activations"));
  BOOST_TEST(term(cuda, "parameters") == term(cpu, "parameters"));
}

BOOST_AUTO_TEST_SUITE_END()
