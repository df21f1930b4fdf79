#include <string>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "unit/runtime/run_helpers.hpp"
#include "unit/runtime/saved_weights.hpp"
#include "testkit/home.hpp"

using cdui::test::add_edge;
using cdui::test::add_node;
using cdui::test::load_weights;
using cdui::test::params;
using cdui::test::require_succeeded;
using cdui::test::run_graph;
using cdui::test::same_weights;
using nlohmann::json;

namespace {

/// Moons through an MLP with Dropout, shuffled every epoch, saved to checkpoints/model.pt.
json dropout_graph() {
  json doc = cdui::test::moons_graph();
  params(doc, "model")["layers"] = R"([
    {"type": "Linear", "out_features": 32},
    {"type": "ReLU"},
    {"type": "Dropout", "p": 0.3},
    {"type": "Linear", "out_features": 2}
  ])"_json;
  params(doc, "loader")["shuffle"] = true;
  params(doc, "loop")["epochs"] = 2;
  add_node(doc, "save", "ModelSaver", {{"path", "model.pt"}});
  add_edge(doc, "loop.model", "save.model");
  return doc;
}

struct trained {
  cdui::test::named_tensors weights;
  std::vector<double> train_loss;
};

trained train(const json& doc, std::uint64_t seed) {
  cdui::test::temp_home home;
  cdui::test::run_options options;
  options.seed = seed;
  options.num_threads = 1;
  auto run = run_graph(doc, home.path(), options);
  require_succeeded(run);
  BOOST_TEST(run.metrics["save"]["path"] == (home.path() / "checkpoints" / "model.pt").string());
  return {load_weights(home.path() / "checkpoints" / "model.pt"), run.series("loop", "train_loss")};
}

} // namespace

BOOST_AUTO_TEST_SUITE(reproducibility_test)

BOOST_AUTO_TEST_CASE(the_same_seed_gives_bitwise_the_same_weights) {
  auto a = train(dropout_graph(), 42);
  auto b = train(dropout_graph(), 42);
  // Two Linear layers: weight and bias each.
  BOOST_TEST_REQUIRE(a.weights.size() == 4u);
  BOOST_TEST(same_weights(a.weights, b.weights));
  BOOST_TEST(a.train_loss == b.train_loss);
}

BOOST_AUTO_TEST_CASE(another_seed_gives_other_weights) {
  auto a = train(dropout_graph(), 42);
  auto b = train(dropout_graph(), 43);
  BOOST_TEST_REQUIRE(a.weights.size() == b.weights.size());
  BOOST_TEST(!same_weights(a.weights, b.weights));
  BOOST_TEST(a.train_loss != b.train_loss);
}

BOOST_AUTO_TEST_CASE(dropout_takes_part_in_training) {
  // Dropout at p 0 is the identity: with the same seed the weights then differ from the p 0.3 run.
  auto with = train(dropout_graph(), 42);
  json doc = dropout_graph();
  params(doc, "model")["layers"][2]["p"] = 0.0;
  auto without = train(doc, 42);
  BOOST_TEST(!same_weights(with.weights, without.weights));
}

BOOST_AUTO_TEST_CASE(concurrent_runs_with_one_seed_stay_reproducible) {
  // Each run draws from its own generator, so two runs in one process at once do not disturb each
  // other.
  auto reference = train(dropout_graph(), 42);
  cdui::test::temp_home home_a, home_b;
  auto graph = cdui::test::require_valid(dropout_graph());
  auto run_in = [&](const std::filesystem::path& dir, cdui::run_outcome& outcome) {
    cdui::runtime::run_context ctx;
    ctx.run_id = dir.filename().string();
    ctx.run_dir = dir;
    ctx.seed = 42;
    ctx.num_threads = 1;
    ctx.emit = [](const std::string&, const nlohmann::json&) {};
    outcome = cdui::runtime::execute(graph, ctx);
  };
  cdui::run_outcome a, b;
  std::thread ta{run_in, home_a.path(), std::ref(a)};
  std::thread tb{run_in, home_b.path(), std::ref(b)};
  ta.join();
  tb.join();
  BOOST_TEST_REQUIRE((a.status == cdui::run_status::succeeded), a.error);
  BOOST_TEST_REQUIRE((b.status == cdui::run_status::succeeded), b.error);
  BOOST_TEST(same_weights(load_weights(home_a.path() / "checkpoints" / "model.pt"), reference.weights));
  BOOST_TEST(same_weights(load_weights(home_b.path() / "checkpoints" / "model.pt"), reference.weights));
}

BOOST_AUTO_TEST_SUITE_END()
