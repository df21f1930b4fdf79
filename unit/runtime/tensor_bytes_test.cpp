#include <boost/test/unit_test.hpp>

#include <memory>

#include <torch/torch.h>

#include "runtime/nodes/values.hpp"
#include "runtime/tensor_bytes.hpp"

using cdui::runtime::count_tensor_bytes;
using cdui::runtime::tensor_bytes_counter;

BOOST_AUTO_TEST_SUITE(tensor_bytes_test)

BOOST_AUTO_TEST_CASE(a_tensor_and_two_views_of_it_count_once) {
  auto t = torch::zeros({1000}, torch::kFloat32);
  auto reshaped = t.view({10, 100});
  auto sliced = t.slice(0, 500, 600);
  BOOST_TEST(count_tensor_bytes({t, reshaped, sliced}) == 4000);
  // A view alone still holds its whole base storage.
  BOOST_TEST(count_tensor_bytes({sliced}) == 4000);
}

BOOST_AUTO_TEST_CASE(distinct_tensors_add_up_and_undefined_ones_add_nothing) {
  auto a = torch::zeros({1000}, torch::kFloat32);
  auto b = torch::zeros({10}, torch::kFloat64);
  auto copy = a.clone();
  BOOST_TEST(count_tensor_bytes({a, b, at::Tensor{}}) == 4080);
  BOOST_TEST(count_tensor_bytes({a, copy}) == 8000);
}

BOOST_AUTO_TEST_CASE(a_linear_layer_counts_its_weight_and_bias) {
  torch::nn::Linear linear{100, 50};
  BOOST_TEST(count_tensor_bytes(*linear) == 20200);  // (5000 + 50) floats
  // Gradients grown later are not counted: sizes are measured when the module is built.
  linear->forward(torch::ones({3, 100})).sum().backward();
  BOOST_REQUIRE(linear->weight.grad().defined());
  BOOST_TEST(count_tensor_bytes(*linear) == 20200);
}

BOOST_AUTO_TEST_CASE(buffers_and_submodules_are_counted) {
  torch::nn::Sequential model{torch::nn::Linear(100, 50), torch::nn::BatchNorm1d(50)};
  // Linear 20200; BatchNorm weight, bias, running mean and variance (4 x 50 floats) and an int64
  // num_batches_tracked.
  BOOST_TEST(count_tensor_bytes(*model) == 20200 + 800 + 8);
}

BOOST_AUTO_TEST_CASE(a_module_and_a_tensor_sharing_its_weight_count_once) {
  torch::nn::Linear linear{100, 50};
  tensor_bytes_counter counter;
  counter.add(*linear);
  counter.add(linear->weight.t());
  counter.add(linear->weight.detach());
  BOOST_TEST(counter.bytes() == 20200);
  // The same in the other order, and a new tensor still adds its own bytes.
  tensor_bytes_counter reversed;
  reversed.add(linear->bias.view({5, 10}));
  reversed.add(*linear);
  reversed.add(torch::zeros({25}, torch::kFloat32));
  BOOST_TEST(reversed.bytes() == 20300);
}

BOOST_AUTO_TEST_CASE(port_values_count_each_storage_once_across_ports) {
  using namespace cdui::runtime::nodes;
  auto dataset = std::make_shared<dataset_value>();
  dataset->inputs = torch::zeros({100, 4}, torch::kFloat32);  // 1600 bytes
  dataset->targets = torch::zeros({100}, torch::kInt64);      // 800 bytes
  auto loader = std::make_shared<loader_value>();
  loader->dataset = dataset;
  auto model = std::make_shared<model_value>();
  model->module = torch::nn::Sequential{torch::nn::Linear(100, 50)};
  auto state = std::make_shared<optimizer_state_value>();
  state->bytes = std::string(300, 'x');
  cdui::runtime::port_values outputs{
      {"dataset", cdui::runtime::value{dataset}},
      {"dataloader", cdui::runtime::value{loader}},
      {"model", cdui::runtime::value{model}},
      {"optimizer_state", cdui::runtime::value{state}},
      {"loss_fn", cdui::runtime::value{std::make_shared<loss_value>()}},
  };
  BOOST_TEST(cdui::runtime::count_value_bytes(outputs) == 2400 + 20200 + 300);
  // The same values seen again through another node's outputs add nothing.
  tensor_bytes_counter counter;
  counter.add_values(outputs);
  counter.add_value(cdui::runtime::value{loader});
  counter.add_value(cdui::runtime::value{state});
  counter.add(dataset->inputs.slice(0, 0, 10));
  BOOST_TEST(counter.bytes() == 2400 + 20200 + 300);
}

BOOST_AUTO_TEST_SUITE_END()
