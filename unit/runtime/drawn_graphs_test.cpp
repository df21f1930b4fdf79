// Graphs drawn from seeds (testkit/drawn_graphs.hpp) validate and train, and the static estimate
// holds on them; beside them, one focused test for each failure the draws found.

#include <cmath>
#include <set>

#include <boost/test/unit_test.hpp>

#include "runtime/estimate.hpp"
#include "testkit/drawn_graphs.hpp"
#include "testkit/home.hpp"
#include "unit/runtime/run_helpers.hpp"

using namespace cdui;
using nlohmann::json;

namespace {

/// The seeds the unit test draws (bench_estimate --generated draws as many as asked).
constexpr std::uint64_t drawn_count = 30;

/// How far the estimate may miss a small run's peak beyond 10%.
constexpr std::int64_t scratch_allowance = 64 << 10;

std::multiset<std::string> layer_types(const json& graph) {
  std::multiset<std::string> types;
  for (const auto& n : graph["nodes"])
    if (n["type"] == "Model")
      for (const auto& l : n["params"]["layers"])
        types.insert(l["type"].get<std::string>());
  return types;
}

} // namespace

BOOST_AUTO_TEST_SUITE(drawn_graphs_test)

BOOST_AUTO_TEST_CASE(the_same_seed_draws_the_same_graph_and_the_draws_cover_every_feature) {
  BOOST_TEST(test::draw_graph(7).graph == test::draw_graph(7).graph);
  BOOST_TEST(test::draw_graph(7).graph != test::draw_graph(8).graph);

  std::set<std::string> types, precisions, optimizers, checkpoints;
  bool cnn = false, mlp = false, accumulate = false, freeze = false, lora = false, validation = false,
       strided = false, padded = false, momentum = false, mse = false;
  for (std::uint64_t seed = 1; seed <= drawn_count; ++seed) {
    auto d = test::draw_graph(seed);
    for (const auto& t : layer_types(d.graph))
      types.insert(t);
    precisions.insert(d.precision);
    checkpoints.insert(d.checkpoint);
    (d.cnn ? cnn : mlp) = true;
    accumulate |= d.accumulate > 1;
    freeze |= d.freeze;
    lora |= d.lora;
    validation |= d.validation;
    for (const auto& n : d.graph["nodes"]) {
      if (n["type"] == "Optimizer") {
        optimizers.insert(n["params"]["name"].get<std::string>());
        momentum |= n["params"].contains("momentum");
      }
      if (n["type"] == "Loss")
        mse |= n.contains("params") && n["params"]["kind"] == "mse";
      if (n["type"] == "Model")
        for (const auto& l : n["params"]["layers"]) {
          strided |= l.value("stride", 1) > 1;
          padded |= l.value("padding", 0) > 0;
        }
    }
  }
  // Every layer type of docs/graph-format.md, every precision and optimizer, both granularities.
  BOOST_TEST(types == (std::set<std::string>{"BatchNorm1d", "BatchNorm2d", "Conv2d", "Dropout", "Flatten", "GELU",
                                             "LayerNorm", "Linear", "MaxPool2d", "ReLU", "Tanh"}));
  BOOST_TEST(precisions == (std::set<std::string>{"bf16", "fp16", "fp32"}));
  BOOST_TEST(optimizers == (std::set<std::string>{"adam", "adamw", "rmsprop", "sgd"}));
  BOOST_TEST(checkpoints == (std::set<std::string>{"", "full", "selective"}));
  BOOST_TEST((cnn && mlp && accumulate && freeze && lora && validation && strided && padded && momentum && mse));
}

BOOST_AUTO_TEST_CASE(every_drawn_graph_validates_trains_and_is_estimated) {
  test::temp_home home;
  for (std::uint64_t seed = 1; seed <= drawn_count; ++seed) {
    auto d = test::draw_graph(seed);
    BOOST_TEST_CONTEXT(d.name << "\n" << d.graph.dump()) {
      auto run = test::run_graph(d.graph, home.path() / ("run" + std::to_string(seed)));
      test::require_succeeded(run);
      const auto& loop = run.metrics["loop"];
      BOOST_TEST(loop["total_steps"].get<std::int64_t>() >= 2);
      BOOST_TEST(std::isfinite(loop["final_train_loss"].is_null() ? 0.0 : loop["final_train_loss"].get<double>()));

      auto e = runtime::estimate_memory(test::require_valid(d.graph));
      BOOST_TEST(e.parameters == run.metrics["model"]["parameters"].get<std::int64_t>());
      BOOST_TEST(e.trainable_parameters == run.metrics["model"]["trainable_parameters"].get<std::int64_t>());
      if (e.is_rough()) {
        // Only a combination the estimate cannot count honestly, and it says which: a bf16 run on
        // CPU kernels its 16-bit rules were not measured on (estimate_test).
        bool unmeasured_kernels = d.precision == "bf16" && !runtime::measured_16_bit_kernels(runtime::this_cpu_kernels());
        BOOST_TEST(unmeasured_kernels, e.rough);
        BOOST_TEST(!e.rough.empty());
        continue;
      }
      auto peak = loop["peak_memory_bytes"]["cpu"].get<std::int64_t>();
      auto ratio = static_cast<double>(e.total_without_cuda()) / static_cast<double>(peak);
      BOOST_TEST_MESSAGE(d.name << ": estimate " << e.total_without_cuda() << ", peak " << peak << ", ratio " << ratio);
      // Within 10%, or within the CPU libraries' scratch buffers that a run of a few hundred KiB
      // can be made of (oneDNN's 16-bit matrix products pack their operands; docs/benchmarks.md).
      auto off = std::abs(e.total_without_cuda() - peak);
      bool held = (ratio >= 0.9 && ratio <= 1.1) || off <= scratch_allowance;
      BOOST_TEST(held, "ratio " << ratio << ", " << off << " bytes off");
    }
  }
}

// Found by the draws: a BatchNorm1d after a Linear cannot train on a batch of one sample, and 33
// samples in batches of 32 leave one in the epoch's last batch.
BOOST_AUTO_TEST_CASE(a_last_batch_of_one_sample_is_skipped_beside_a_batch_norm) {
  test::temp_home home;
  auto graph = test::training_graph_json(
    {{"name", "moons"}, {"n_samples", 33}}, {{"batch_size", 32}},
    {{{"type", "Linear"}, {"out_features", 8}}, {{"type", "BatchNorm1d"}}, {{"type", "ReLU"}},
     {{"type", "Linear"}, {"out_features", 2}}},
    {{"name", "sgd"}, {"lr", 0.1}}, {{"epochs", 2}, {"device", "cpu"}});
  auto run = test::run_graph(graph, home.path() / "skips");
  test::require_succeeded(run);
  BOOST_TEST(run.metrics["loop"]["total_batches"] == 2);  // one batch of 32 each epoch
  auto warnings = run.of_type("run_warning");
  BOOST_REQUIRE(warnings.size() == 1);
  BOOST_TEST(warnings[0]["kind"] == "batch_skipped");
  auto message = warnings[0]["message"].get<std::string>();
  BOOST_TEST(message.find("BatchNorm1d2") != std::string::npos, message);
  BOOST_TEST(message.find("33 samples in batches of 32") != std::string::npos, message);

  // drop_last says the same in the graph: no warning.
  test::params(graph, "loader")["drop_last"] = true;
  run = test::run_graph(graph, home.path() / "drops");
  test::require_succeeded(run);
  BOOST_TEST(run.of_type("run_warning").empty());

  // A BatchNorm2d over images of more than one pixel trains on one sample: nothing skipped.
  graph = test::training_graph_json(
    {{"name", "fashion_mnist"}, {"limit", 33}}, {{"batch_size", 32}},
    {{{"type", "Conv2d"}, {"out_channels", 2}, {"kernel_size", 3}}, {{"type", "BatchNorm2d"}}, {{"type", "Flatten"}},
     {{"type", "Linear"}, {"out_features", 10}}},
    {{"name", "sgd"}, {"lr", 0.1}}, {{"epochs", 1}, {"device", "cpu"}});
  run = test::run_graph(graph, home.path() / "images");
  test::require_succeeded(run);
  BOOST_TEST(run.metrics["loop"]["total_batches"] == 2);
  BOOST_TEST(run.of_type("run_warning").empty());

  // Batches of one sample: nothing could train; the node says why before it starts.
  graph = test::training_graph_json(
    {{"name", "moons"}, {"n_samples", 8}}, {{"batch_size", 1}},
    {{{"type", "Linear"}, {"out_features", 8}}, {{"type", "BatchNorm1d"}}, {{"type", "Linear"}, {"out_features", 2}}},
    {{"name", "sgd"}, {"lr", 0.1}}, {{"epochs", 1}, {"device", "cpu"}});
  run = test::run_graph(graph, home.path() / "ones");
  BOOST_TEST(!run.succeeded());
  BOOST_TEST(run.outcome.error.find("every training batch holds one sample") != std::string::npos, run.outcome.error);
  BOOST_TEST(run.outcome.error.find("BatchNorm1d2") != std::string::npos, run.outcome.error);
}

BOOST_AUTO_TEST_SUITE_END()
