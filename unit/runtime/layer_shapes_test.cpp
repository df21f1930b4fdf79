// The shape rules of the Model node's layers (runtime/layer_shapes.hpp): each type's output shape
// and parameter count, the sentences for shapes a layer cannot take, and sizes refused before they
// could overflow.
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "runtime/layer_shapes.hpp"

using namespace cdui::runtime;
using nlohmann::json;

namespace {

layer_plan plan(const json& layer, const sample_shape& in) {
  auto planned = plan_layer(layer, in, "layer 1 (" + layer["type"].get<std::string>() + ")");
  if (auto* error = std::get_if<std::string>(&planned))
    BOOST_FAIL(*error);
  return std::get<layer_plan>(planned);
}

std::string refusal(const json& layer, const sample_shape& in) {
  auto planned = plan_layer(layer, in, "layer 1 (" + layer["type"].get<std::string>() + ")");
  auto* error = std::get_if<std::string>(&planned);
  BOOST_REQUIRE(error != nullptr);
  return *error;
}

} // namespace

BOOST_AUTO_TEST_SUITE(layer_shapes_test)

BOOST_AUTO_TEST_CASE(each_layer_type_gives_its_shape_and_parameters) {
  auto linear = plan({{"type", "Linear"}, {"out_features", 10}}, {784});
  BOOST_TEST(linear.out == sample_shape({10}), shape_text(linear.out));
  BOOST_TEST(linear.parameters == 7850);
  BOOST_TEST(linear.cast_parameters == 7850);
  BOOST_TEST(plan({{"type", "Linear"}, {"out_features", 10}, {"bias", false}}, {784}).parameters == 7840);

  auto conv = plan({{"type", "Conv2d"}, {"out_channels", 16}, {"kernel_size", 3}, {"padding", 1}}, {1, 28, 28});
  BOOST_TEST(conv.out == sample_shape({16, 28, 28}), shape_text(conv.out));
  BOOST_TEST(conv.parameters == 16 * 9 + 16);
  auto strided = plan({{"type", "Conv2d"}, {"out_channels", 8}, {"kernel_size", 5}, {"stride", 2}}, {3, 32, 32});
  BOOST_TEST(strided.out == sample_shape({8, 14, 14}), shape_text(strided.out));

  BOOST_TEST(plan({{"type", "MaxPool2d"}, {"kernel_size", 2}}, {16, 28, 28}).out == sample_shape({16, 14, 14}));
  BOOST_TEST(plan({{"type", "MaxPool2d"}, {"kernel_size", 3}, {"stride", 2}}, {16, 7, 7}).out
             == sample_shape({16, 3, 3}));
  BOOST_TEST(plan({{"type", "Flatten"}}, {32, 7, 7}).out == sample_shape({1568}));
  for (const auto* type : {"ReLU", "GELU", "Tanh", "Dropout"})
    BOOST_TEST(plan({{"type", type}}, {4, 5}).out == sample_shape({4, 5}));
  auto bn = plan({{"type", "BatchNorm2d"}}, {16, 28, 28});
  BOOST_TEST(bn.parameters == 32);
  BOOST_TEST(bn.buffer_floats == 32);
  BOOST_TEST(bn.buffer_int64s == 1);
  BOOST_TEST(bn.cast_parameters == 0);
  BOOST_TEST(plan({{"type", "LayerNorm"}}, {6, 64}).parameters == 128);
}

BOOST_AUTO_TEST_CASE(shapes_a_layer_cannot_take_are_named) {
  BOOST_TEST(refusal({{"type", "Linear"}, {"out_features", 10}}, {1, 28, 28})
             == "layer 1 (Linear) receives [N, 1, 28, 28]; a Linear layer here needs [N, features]: "
                "add a Flatten layer before it");
  BOOST_TEST(refusal({{"type", "Linear"}, {"out_features", 10}, {"in_features", 5}}, {4})
             == "layer 1 (Linear) declares in_features 5 but receives [N, 4]");
  BOOST_TEST(refusal({{"type", "Conv2d"}, {"out_channels", 4}, {"kernel_size", 5}}, {1, 3, 3})
             == "layer 1 (Conv2d) cannot take an input of shape [N, 1, 3, 3]: its kernel (5x5) is larger "
                "than the input (3x3)");
  BOOST_TEST(refusal({{"type", "MaxPool2d"}, {"kernel_size", 4}}, {8, 2, 2})
             == "layer 1 (MaxPool2d) cannot take an input of shape [N, 8, 2, 2]: its window (4x4) is "
                "larger than the input (2x2)");
  BOOST_TEST(refusal({{"type", "BatchNorm2d"}}, {10})
             == "layer 1 (BatchNorm2d) receives [N, 10]; BatchNorm2d needs [N, channels, height, width]");
}

BOOST_AUTO_TEST_CASE(sizes_past_two_to_the_forty_are_refused) {
  auto huge = std::int64_t{1} << 30;
  BOOST_TEST(refusal({{"type", "Linear"}, {"out_features", huge}}, {huge}).find("too large")
             != std::string::npos);
  BOOST_TEST(refusal({{"type", "Flatten"}}, {huge, huge, huge}).find("too large")
             != std::string::npos);
  auto plans = plan_layers(json::array({{{"type", "Flatten"}}, {{"type", "Linear"}, {"out_features", 2}}}),
                           {1, 28, 28});
  BOOST_REQUIRE(std::holds_alternative<std::vector<layer_plan>>(plans));
  BOOST_TEST(std::get<std::vector<layer_plan>>(plans).back().out == sample_shape({2}));
}

BOOST_AUTO_TEST_CASE(layer_fields_are_checked_with_the_node_and_layer) {
  auto errors = check_layers("m", json::array({{{"type", "Linear"}}, {{"type", "Conv3d"}}}));
  BOOST_REQUIRE(errors.size() == 2);
  BOOST_TEST(errors[0] == "node 'm' (Model), layer 1 (Linear): missing 'out_features'");
  BOOST_TEST(errors[1].find("unknown layer type 'Conv3d'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(blocks_begin_at_each_linear_or_conv2d_and_what_comes_before_joins_the_first) {
  using cdui::runtime::block_starts;
  auto layers = [](std::initializer_list<const char*> types) {
    auto list = nlohmann::json::array();
    for (const auto* t : types)
      list.push_back({{"type", t}});
    return list;
  };
  // The CNN example: two convolution blocks, then Flatten and Dropout join the second block's tail.
  BOOST_TEST(block_starts(layers({"Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d", "Conv2d", "ReLU", "MaxPool2d",
                                  "Flatten", "Dropout", "Linear", "ReLU", "Linear"}))
             == (std::vector<std::size_t>{0, 4, 9, 11}), boost::test_tools::per_element());
  // Flatten before the first Linear belongs to its block.
  BOOST_TEST(block_starts(layers({"Flatten", "Linear", "ReLU", "Linear"})) == (std::vector<std::size_t>{0, 3}),
             boost::test_tools::per_element());
  // No weight layer: one block.
  BOOST_TEST(block_starts(layers({"Flatten", "ReLU"})) == (std::vector<std::size_t>{0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_block_keeps_inner_activations_when_a_layer_keeps_more_than_its_ends) {
  using cdui::runtime::keeps_inner_activations;
  auto layers = nlohmann::json::parse(R"([{"type": "Flatten"}, {"type": "Linear"}, {"type": "ReLU"},
    {"type": "Linear"}, {"type": "ReLU"}, {"type": "Dropout", "p": 0.3}, {"type": "Linear"},
    {"type": "ReLU"}, {"type": "Dropout", "p": 0}, {"type": "Flatten"}, {"type": "Linear"},
    {"type": "GELU"}, {"type": "Conv2d"}, {"type": "MaxPool2d"}, {"type": "BatchNorm2d"}, {"type": "Linear"}])");
  BOOST_TEST(!keeps_inner_activations(layers, 0, 3));  // Flatten, Linear (its input), ReLU (its output)
  BOOST_TEST(keeps_inner_activations(layers, 3, 6));   // ReLU's output is the dropout's input; the mask
  BOOST_TEST(!keeps_inner_activations(layers, 6, 10)); // Dropout with p 0 and Flatten pass it on
  BOOST_TEST(keeps_inner_activations(layers, 10, 12)); // GELU keeps its input, the Linear's output
  BOOST_TEST(keeps_inner_activations(layers, 12, 14)); // MaxPool2d keeps its input and indices
  BOOST_TEST(keeps_inner_activations(layers, 14, 16)); // a norm before the Linear: the Linear's input is its own
}

// The CNN example: its first convolution (1 channel, 3x3: 9 multiply-adds an element) is cheap to
// recompute, its second (16 channels: 144) and the Linear of 1568 inputs are not.
BOOST_AUTO_TEST_CASE(the_checkpoint_plan_recomputes_whole_blocks_or_keeps_costly_layers_outputs) {
  using namespace cdui::runtime;
  auto layers = nlohmann::json::parse(R"([
    {"type": "Conv2d", "out_channels": 16, "kernel_size": 3, "padding": 1}, {"type": "BatchNorm2d"},
    {"type": "ReLU"}, {"type": "MaxPool2d", "kernel_size": 2},
    {"type": "Conv2d", "out_channels": 32, "kernel_size": 3, "padding": 1}, {"type": "ReLU"},
    {"type": "MaxPool2d", "kernel_size": 2}, {"type": "Flatten"}, {"type": "Dropout", "p": 0.25},
    {"type": "Linear", "out_features": 128}, {"type": "ReLU"}, {"type": "Linear", "out_features": 10}])");
  auto planned = plan_layers(layers, {1, 28, 28});
  BOOST_REQUIRE(std::holds_alternative<std::vector<layer_plan>>(planned));
  const auto& plans = std::get<std::vector<layer_plan>>(planned);
  BOOST_TEST(macs_per_output(plans[0]) == 9);
  BOOST_TEST(macs_per_output(plans[4]) == 144);
  BOOST_TEST(macs_per_output(plans[9]) == 1568);
  BOOST_TEST(macs_per_output(plans[2]) == 0);
  using seg = forward_segment;
  // Full: each block that keeps something of its own is recomputed; [Linear, ReLU] keeps nothing
  // of its own, and the last block never is.
  BOOST_TEST((checkpoint_plan(layers, plans, recompute_granularity::full)
              == std::vector<seg>{{0, 4, true}, {4, 9, true}, {9, 12, false}}));
  // Selective: the second convolution's output is kept, and what follows it recomputed.
  BOOST_TEST((checkpoint_plan(layers, plans, recompute_granularity::selective)
              == std::vector<seg>{{0, 4, true}, {4, 5, false}, {5, 9, true}, {9, 12, false}}));

  // A block of Linear, LayerNorm, GELU, Dropout: the Linear of 1024 inputs is kept, the rest recomputed.
  auto deep = nlohmann::json::parse(R"([{"type": "Flatten"},
    {"type": "Linear", "out_features": 1024}, {"type": "LayerNorm"}, {"type": "GELU"}, {"type": "Dropout", "p": 0.1},
    {"type": "Linear", "out_features": 1024}, {"type": "LayerNorm"}, {"type": "GELU"}, {"type": "Dropout", "p": 0.1},
    {"type": "Linear", "out_features": 10}])");
  auto deep_plans = std::get<std::vector<layer_plan>>(plan_layers(deep, {1, 28, 28}));
  BOOST_TEST((checkpoint_plan(deep, deep_plans, recompute_granularity::selective)
              == std::vector<seg>{{0, 2, false}, {2, 5, true}, {5, 6, false}, {6, 9, true}, {9, 10, false}}));
  BOOST_TEST((checkpoint_plan(deep, deep_plans, recompute_granularity::full)
              == std::vector<seg>{{0, 5, true}, {5, 9, true}, {9, 10, false}}));
  // The MLP example: nothing of its own to drop, so nothing is recomputed.
  auto mlp = nlohmann::json::parse(R"([{"type": "Flatten"}, {"type": "Linear", "out_features": 128},
    {"type": "ReLU"}, {"type": "Linear", "out_features": 10}])");
  auto mlp_plans = std::get<std::vector<layer_plan>>(plan_layers(mlp, {1, 28, 28}));
  for (auto how : {recompute_granularity::full, recompute_granularity::selective})
    BOOST_TEST((checkpoint_plan(mlp, mlp_plans, how) == std::vector<seg>{{0, 4, false}}));
}

BOOST_AUTO_TEST_SUITE_END()
