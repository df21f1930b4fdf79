// Freezing and LoRA trained for real (docs/graph-format.md, "Freezing and LoRA"): frozen
// parameters keep their values and have no optimizer state, an untrained adapter changes nothing,
// training moves only the adapters, merged weights compute what the adapted layer computes, a run
// with adapters resumes bit for bit, and the measured peak falls by the frozen parameters'
// gradients and optimizer state.
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "runtime/estimate.hpp"
#include "runtime/nodes/lora.hpp"
#include "testkit/home.hpp"
#include "unit/runtime/run_helpers.hpp"
#include "unit/runtime/saved_weights.hpp"

namespace fs = std::filesystem;
using cdui::test::load_weights;
using cdui::test::require_succeeded;
using cdui::test::run_graph;
using nlohmann::json;

namespace {

/// run_helpers' dropout_moons_graph (Linear1 2 -> 32, ReLU2, Dropout3, Linear4 32 -> 2), 2 epochs;
/// ModelSaver "before" writes before.pt ahead of the loop, "after" writes after.pt of the trained
/// model, CheckpointSaver "ckpt" the optimizer's state.
json graph(const json& model_params, const json& loop_params = json::object()) {
  json loop{{"epochs", 2}, {"progress_interval_ms", 0}};
  loop.update(loop_params);
  auto g = cdui::test::dropout_moons_graph(loop);
  cdui::test::params(g, "model").update(model_params);
  auto& nodes = g["nodes"];
  nodes.insert(nodes.begin() + 3, json{{"id", "before"}, {"type", "ModelSaver"}, {"params", {{"path", "before.pt"}}}});
  nodes.push_back({{"id", "after"}, {"type", "ModelSaver"}, {"params", {{"path", "after.pt"}}}});
  nodes.push_back({{"id", "ckpt"}, {"type", "CheckpointSaver"}, {"params", {{"path", "ckpt.pt"}}}});
  g["edges"].push_back({{"from", "model.model"}, {"to", "before.model"}});
  g["edges"].push_back({{"from", "loop.model"}, {"to", "after.model"}});
  g["edges"].push_back({{"from", "loop.model"}, {"to", "ckpt.model"}});
  g["edges"].push_back({{"from", "loop.optimizer_state"}, {"to", "ckpt.optimizer_state"}});
  return g;
}

/// The numbers of the optimizer's exp_avg tensors in a CheckpointSaver file: one per number it
/// keeps state for.
std::int64_t adam_state_numbers(const fs::path& checkpoint) {
  torch::serialize::InputArchive archive, state;
  archive.load_from(checkpoint.string());
  at::Tensor bytes;
  BOOST_REQUIRE(archive.try_read("optimizer", bytes));
  std::istringstream in{std::string{static_cast<const char*>(bytes.data_ptr()), static_cast<std::size_t>(bytes.numel())}};
  state.load_from(in);
  cdui::test::named_tensors all;
  cdui::test::detail::collect(state, "", all);
  std::int64_t numbers = 0;
  for (const auto& [name, t] : all)
    if (name.size() >= 8 && name.substr(name.size() - 8) == ".exp_avg")
      numbers += t.numel();
  return numbers;
}

} // namespace

BOOST_AUTO_TEST_SUITE(lora_test)

BOOST_AUTO_TEST_CASE(frozen_layers_keep_their_weights_and_have_no_optimizer_state) {
  cdui::test::temp_home home;
  auto dir = home.path() / "run";
  auto run = run_graph(graph({{"freeze", {"Linear1"}}}), dir);
  require_succeeded(run);
  auto before = load_weights(dir / "checkpoints" / "before.pt");
  auto after = load_weights(dir / "checkpoints" / "after.pt");
  BOOST_TEST(torch::equal(before.at("Linear1.weight"), after.at("Linear1.weight")));
  BOOST_TEST(torch::equal(before.at("Linear1.bias"), after.at("Linear1.bias")));
  BOOST_TEST(!torch::equal(before.at("Linear4.weight"), after.at("Linear4.weight")));
  // Linear1: 2 x 32 + 32 = 96 frozen; Linear4: 32 x 2 + 2 = 66 trained.
  BOOST_TEST(adam_state_numbers(dir / "checkpoints" / "ckpt.pt") == 66);
  for (const auto& figures : {run.metrics["model"], run.metrics["loop"], run.config("model"), run.config("loop")}) {
    BOOST_TEST(figures["parameters"] == 162);
    BOOST_TEST(figures["trainable_parameters"] == 66);
    BOOST_TEST(figures["trainable_share"].get<double>() == 66.0 / 162.0);
  }
}

BOOST_AUTO_TEST_CASE(an_untrained_adapter_changes_nothing) {
  // Without a TrainingLoop: the same seed builds the same base weights, and B = 0.
  auto scored = [](const json& model_params) {
    json g{{"nodes",
            {{{"id", "data"}, {"type", "Dataset"}, {"params", {{"name", "moons"}, {"n_samples", 256}}}},
             {{"id", "loader"}, {"type", "DataLoader"}, {"params", {{"batch_size", 64}, {"shuffle", false}}}},
             {{"id", "model"}, {"type", "Model"}, {"params", {{"layers", json::parse(R"([
                {"type": "Linear", "out_features": 32}, {"type": "ReLU"}, {"type": "Linear", "out_features": 2}])")}}}},
             {{"id", "loss"}, {"type", "Loss"}},
             {{"id", "eval"}, {"type", "EvaluateModel"}}}},
           {"edges",
            {{{"from", "data.dataset"}, {"to", "loader.dataset"}},
             {{"from", "data.dataset"}, {"to", "model.dataset"}},
             {{"from", "model.model"}, {"to", "eval.model"}},
             {{"from", "loader.dataloader"}, {"to", "eval.dataloader"}},
             {{"from", "loss.loss_fn"}, {"to", "eval.loss_fn"}}}}};
    cdui::test::params(g, "model").update(model_params);
    cdui::test::temp_home home;
    auto run = run_graph(g, home.path() / "run");
    require_succeeded(run);
    return run.metrics["eval"];
  };
  auto base = scored(json::object());
  auto adapted = scored({{"lora", {{"rank", 4}, {"alpha", 16}}}});
  BOOST_TEST(adapted["loss"].get<double>() == base["loss"].get<double>());
  BOOST_TEST(adapted["accuracy"].get<double>() == base["accuracy"].get<double>());
}

BOOST_AUTO_TEST_CASE(training_changes_only_the_adapters) {
  cdui::test::temp_home home;
  auto dir = home.path() / "run";
  auto run = run_graph(graph({{"lora", {{"rank", 4}, {"alpha", 8}}}}), dir);
  require_succeeded(run);
  auto before = load_weights(dir / "checkpoints" / "before.pt");
  auto after = load_weights(dir / "checkpoints" / "after.pt");
  for (const auto* layer : {"Linear1", "Linear4"}) {
    auto name = std::string{layer};
    BOOST_TEST(torch::equal(before.at(name + ".weight"), after.at(name + ".weight")), name);
    BOOST_TEST(torch::equal(before.at(name + ".bias"), after.at(name + ".bias")), name);
    BOOST_TEST(torch::equal(before.at(name + ".lora_B"), torch::zeros_like(before.at(name + ".lora_B"))), name);
    BOOST_TEST(!torch::equal(before.at(name + ".lora_A"), after.at(name + ".lora_A")), name);
    BOOST_TEST(!torch::equal(before.at(name + ".lora_B"), after.at(name + ".lora_B")), name);
  }
  // Adapters: Linear1 A 4 x 2 + B 32 x 4 = 136, Linear4 A 4 x 32 + B 2 x 4 = 136.
  BOOST_TEST(adam_state_numbers(dir / "checkpoints" / "ckpt.pt") == 272);
  BOOST_TEST(run.metrics["loop"]["parameters"] == 162 + 272);
  BOOST_TEST(run.metrics["loop"]["trainable_parameters"] == 272);
}

BOOST_AUTO_TEST_CASE(merged_weights_compute_what_the_adapted_layer_computes) {
  torch::manual_seed(3);
  auto gen = at::detail::createCPUGenerator(7);
  auto weight = torch::randn({5, 3}), bias = torch::randn({5});
  auto layer = std::make_shared<cdui::runtime::nodes::lora_linear_impl>(weight, bias, 2, 4.0, gen);
  auto x = torch::randn({8, 3});
  {
    torch::NoGradGuard no_grad;  // thread-local: only for these few lines, not for the run below
    BOOST_TEST(torch::equal(layer->forward(x), at::linear(x, weight, bias)));  // B = 0
    layer->named_parameters()["lora_B"].copy_(torch::randn({5, 2}));
    auto adapted = layer->forward(x);
    BOOST_TEST(!torch::allclose(adapted, at::linear(x, weight, bias)));
    BOOST_TEST(torch::allclose(adapted, at::linear(x, layer->merged_weight(), bias), 1e-5, 1e-6));
  }

  // ModelSaver's merge_lora writes that weight under the Linear's names, without the adapters.
  cdui::test::temp_home home;
  auto dir = home.path() / "run";
  auto doc = graph({{"lora", {{"rank", 4}}}});
  doc["nodes"].push_back({{"id", "merged"}, {"type", "ModelSaver"}, {"params", {{"path", "merged.pt"}, {"merge_lora", true}}}});
  doc["edges"].push_back({{"from", "loop.model"}, {"to", "merged.model"}});
  auto run = run_graph(doc, dir);
  require_succeeded(run);
  auto saved = load_weights(dir / "checkpoints" / "after.pt");
  auto merged = load_weights(dir / "checkpoints" / "merged.pt");
  BOOST_TEST(merged.size() == 4u);  // Linear1 and Linear4: weight and bias
  auto points = torch::randn({16, 2});
  auto adapter = [&](const std::string& l, const at::Tensor& in) {
    return at::linear(in, saved.at(l + ".weight"), saved.at(l + ".bias"))
           + at::linear(at::linear(in, saved.at(l + ".lora_A")), saved.at(l + ".lora_B")) * (8.0 / 4);
  };
  auto through_adapters = adapter("Linear4", torch::relu(adapter("Linear1", points)));
  torch::NoGradGuard no_grad;
  auto through_merged = at::linear(torch::relu(at::linear(points, merged.at("Linear1.weight"), merged.at("Linear1.bias"))),
                                   merged.at("Linear4.weight"), merged.at("Linear4.bias"));
  BOOST_TEST(torch::allclose(through_adapters, through_merged, 1e-5, 1e-6));
  BOOST_TEST(run.metrics["merged"]["merged_lora"] == true);
}

BOOST_AUTO_TEST_CASE(a_run_with_adapters_resumes_bit_for_bit) {
  cdui::test::temp_home home;
  json lora{{"lora", {{"rank", 2}, {"alpha", 4}, {"layers", {"Linear4"}}}}, {"freeze", {"Linear1.bias"}}};
  auto whole = run_graph(graph(lora, {{"epochs", 3}}), home.path() / "whole");
  require_succeeded(whole);
  auto stopped = run_graph(graph(lora, {{"epochs", 3}}), home.path() / "stopped", cdui::test::stop_at_batch(11));
  BOOST_TEST_REQUIRE((stopped.outcome.status == cdui::run_status::cancelled));
  cdui::test::run_options from_folder;
  from_folder.resume_from = home.path() / "stopped";
  auto resumed = run_graph(graph(lora, {{"epochs", 3}}), home.path() / "resumed", from_folder);
  require_succeeded(resumed);
  auto a = load_weights(home.path() / "whole" / "checkpoints" / "after.pt");
  auto b = load_weights(home.path() / "resumed" / "checkpoints" / "after.pt");
  BOOST_TEST(a.count("Linear4.lora_A") == 1u);
  BOOST_TEST(cdui::test::same_weights(a, b));
  BOOST_TEST(resumed.metrics["loop"]["total_steps"] == whole.metrics["loop"]["total_steps"]);
}

BOOST_AUTO_TEST_CASE(the_measured_peak_falls_by_the_frozen_gradients_and_optimizer_state) {
  // SGD with momentum keeps one buffer per trained number and no temporaries, so freezing n
  // numbers takes n x (4 bytes of gradient + 4 of momentum) off every step. Linear7 (512 x 512),
  // the largest, stays trainable: its backward's weight-gradient temporary sets the peak in both.
  auto doc = [](const json& freeze) {
    auto g = cdui::test::training_graph_json(
      {{"name", "moons"}, {"n_samples", 256}}, {{"batch_size", 32}, {"shuffle", false}},
      json::parse(R"([{"type": "Linear", "out_features": 256}, {"type": "ReLU"},
                      {"type": "Linear", "out_features": 384}, {"type": "ReLU"},
                      {"type": "Linear", "out_features": 512}, {"type": "ReLU"},
                      {"type": "Linear", "out_features": 512}, {"type": "ReLU"},
                      {"type": "Linear", "out_features": 2}])"),
      {{"name", "sgd"}, {"lr", 0.01}, {"momentum", 0.9}},
      {{"epochs", 1}, {"max_steps", 4}, {"device", "cpu"}, {"num_threads", 1}});
    cdui::test::params(g, "model")["freeze"] = freeze;
    return g;
  };
  auto peak = [](const json& g, const std::string& name) {
    cdui::test::temp_home home;
    auto run = run_graph(g, home.path() / name);
    require_succeeded(run);
    return run.metrics["loop"]["peak_memory_bytes"]["cpu"].get<std::int64_t>();
  };
  auto frozen_doc = doc({"Linear3", "Linear5"});
  auto full = peak(doc(json::array()), "full");
  auto frozen = peak(frozen_doc, "frozen");
  std::int64_t frozen_numbers = (256 * 384 + 384) + (384 * 512 + 512);
  auto expected = frozen_numbers * (4 + 4);
  auto drop = full - frozen;
  BOOST_TEST_MESSAGE("peak " << full << " -> " << frozen << ": a drop of " << drop << " bytes, expected " << expected);
  BOOST_TEST(std::abs(static_cast<double>(drop - expected)) <= 0.01 * static_cast<double>(expected),
             "drop " << drop << " expected " << expected);
  // The static estimate's gradients and optimizer_state terms fall by exactly that.
  auto estimate = cdui::runtime::estimate_memory(cdui::test::require_valid(frozen_doc));
  auto unfrozen = cdui::runtime::estimate_memory(cdui::test::require_valid(doc(json::array())));
  BOOST_TEST(unfrozen.total() - estimate.total() == expected);
}

BOOST_AUTO_TEST_SUITE_END()
