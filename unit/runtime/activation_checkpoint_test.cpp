// Activation checkpointing (docs/training-memory.md) trained for real: a Model with
// checkpoint_activations trains to the same weights, bit for bit, as without it (dropout masks,
// BatchNorm's running statistics and bf16 autocast included), and its measured peak falls.
#include <boost/test/unit_test.hpp>

#include <map>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "testkit/home.hpp"
#include "unit/runtime/run_helpers.hpp"
#include "unit/runtime/saved_weights.hpp"

using cdui::test::load_weights;
using cdui::test::require_succeeded;
using cdui::test::run_graph;
using nlohmann::json;

namespace {

/// `g` with a ModelSaver "after" of the trained model (after.pt, buffers included).
json saving(json g) {
  g["nodes"].push_back({{"id", "after"}, {"type", "ModelSaver"}, {"params", {{"path", "after.pt"}}}});
  g["edges"].push_back({{"from", "loop.model"}, {"to", "after.model"}});
  return g;
}

/// The CNN example's layers (BatchNorm2d, two convolutions, Dropout 0.25) on 256 Fashion-MNIST
/// images, batches of 32, plain SGD (so the peak is the activations' and the weights').
json cnn_graph(const std::string& precision) {
  return cdui::test::training_graph_json(
    {{"name", "fashion_mnist"}, {"limit", 256}}, {{"batch_size", 32}, {"shuffle", true}},
    json::parse(R"([{"type": "Conv2d", "out_channels": 16, "kernel_size": 3, "padding": 1},
                    {"type": "BatchNorm2d"}, {"type": "ReLU"}, {"type": "MaxPool2d", "kernel_size": 2},
                    {"type": "Conv2d", "out_channels": 32, "kernel_size": 3, "padding": 1},
                    {"type": "ReLU"}, {"type": "MaxPool2d", "kernel_size": 2},
                    {"type": "Flatten"}, {"type": "Dropout", "p": 0.25},
                    {"type": "Linear", "out_features": 128}, {"type": "ReLU"},
                    {"type": "Linear", "out_features": 10}])"),
    {{"name", "sgd"}, {"lr", 0.05}},
    {{"epochs", 1}, {"device", "cpu"}, {"num_threads", 1}, {"precision", precision}});
}

struct trained {
  cdui::test::named_tensors weights;
  double train_loss = 0;
  std::int64_t peak = 0;
  std::int64_t activations = 0;
};

trained train(json g, bool checkpoint, const std::string& granularity = "selective") {
  cdui::test::params(g, "model")["checkpoint_activations"] = checkpoint;
  cdui::test::params(g, "model")["checkpoint_granularity"] = granularity;
  cdui::test::temp_home home;
  auto dir = home.path() / "run";
  auto run = run_graph(saving(std::move(g)), dir);
  require_succeeded(run);
  return {load_weights(dir / "checkpoints" / "after.pt"), run.metrics["loop"]["final_train_loss"].get<double>(),
          run.metrics["loop"]["peak_memory_bytes"]["cpu"].get<std::int64_t>(),
          run.metrics["loop"]["activation_bytes"]["cpu"].get<std::int64_t>()};
}

} // namespace

BOOST_AUTO_TEST_SUITE(activation_checkpoint_test)

BOOST_AUTO_TEST_CASE(a_seeded_run_with_dropout_gets_the_same_gradients_with_checkpointing) {
  // Moons into Linear1, ReLU2, Dropout3 (0.3), Linear4 with Adam for 2 epochs (16 steps): a
  // gradient that differed in any step would move the weights elsewhere.
  auto g = cdui::test::dropout_moons_graph({{"epochs", 2}});
  auto plain = train(g, false);
  auto checkpointed = train(g, true);
  BOOST_TEST(plain.weights.size() == 4u);
  BOOST_TEST(cdui::test::same_weights(plain.weights, checkpointed.weights));
  BOOST_TEST(plain.train_loss == checkpointed.train_loss);
}

BOOST_AUTO_TEST_CASE(a_cnn_with_batchnorm_and_dropout_trains_the_same_in_fp32_and_bf16) {
  for (const auto* precision : {"fp32", "bf16"}) {
    auto plain = train(cnn_graph(precision), false);
    // BatchNorm2d's running mean and variance are in the file: the recomputed forward pass left
    // them as the first pass set them.
    BOOST_TEST(plain.weights.count("BatchNorm2d2.running_mean") == 1u);
    std::map<std::string, std::int64_t> kept;
    for (const auto* granularity : {"full", "selective"}) {
      BOOST_TEST_CONTEXT("precision " << precision << ", granularity " << granularity) {
        auto checkpointed = train(cnn_graph(precision), true, granularity);
        BOOST_TEST(cdui::test::same_weights(plain.weights, checkpointed.weights));
        BOOST_TEST(plain.train_loss == checkpointed.train_loss);
        BOOST_TEST_MESSAGE(precision << ", " << granularity << ": peak " << plain.peak << " -> " << checkpointed.peak
                           << ", activations " << plain.activations << " -> " << checkpointed.activations);
        BOOST_TEST(checkpointed.activations <= plain.activations / 2);
        kept[granularity] = checkpointed.activations;
      }
    }
    // Selective keeps the second convolution's output ([32, 32, 14, 14]), which full recomputes.
    auto conv_output = std::int64_t{32} * 32 * 14 * 14 * (std::string{precision} == "fp32" ? 4 : 2);
    BOOST_TEST(kept["selective"] - kept["full"] >= conv_output, precision);
  }
}

BOOST_AUTO_TEST_CASE(frozen_layers_and_adapters_train_the_same_with_checkpointing) {
  // A frozen first block and a LoRA adapter on the last: the first block's input and weights need
  // no gradient, so it runs as it is; the adapted block hands its adapters their gradients.
  auto g = cdui::test::dropout_moons_graph({{"epochs", 1}});
  cdui::test::params(g, "model")["freeze"] = {"Linear1"};
  cdui::test::params(g, "model")["lora"] = {{"rank", 2}, {"alpha", 4}, {"layers", {"Linear4"}}};
  auto plain = train(g, false);
  auto checkpointed = train(g, true);
  BOOST_TEST(plain.weights.count("Linear4.lora_A") == 1u);
  BOOST_TEST(cdui::test::same_weights(plain.weights, checkpointed.weights));
}

BOOST_AUTO_TEST_SUITE_END()
