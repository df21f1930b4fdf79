// `cdui fit`: real training steps on a simulated card of the given size.
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "runtime/fit.hpp"
#include "testkit/graphs.hpp"

using nlohmann::json;
using namespace cdui::runtime;

namespace {

/// A wide moons MLP whose activations grow visibly with the batch.
validated_graph wide_moons(std::int64_t batch, std::int64_t accumulate,
                           const std::string& precision = "fp32") {
  auto g = cdui::test::training_graph_json(
    {{"name", "moons"}, {"n_samples", 1024}}, {{"batch_size", batch}},
    {{{"type", "Linear"}, {"out_features", 1024}},
     {{"type", "ReLU"}},
     {{"type", "Linear"}, {"out_features", 1024}},
     {{"type", "ReLU"}},
     {{"type", "Linear"}, {"out_features", 2}}},
    {{"name", "sgd"}, {"lr", 0.01}}, {{"accumulate_steps", accumulate}, {"precision", precision}});
  g["nodes"].push_back({{"id", "eval"}, {"type", "EvaluateModel"}});
  g["edges"].push_back({{"from", "loop.model"}, {"to", "eval.model"}});
  g["edges"].push_back({{"from", "loader.dataloader"}, {"to", "eval.dataloader"}});
  return std::get<validated_graph>(validate_graph(g));
}

} // namespace

BOOST_AUTO_TEST_SUITE(fit_test)

BOOST_AUTO_TEST_CASE(the_peak_grows_with_the_batch_and_the_fit_lands_between_the_bounds) {
  // Unbounded first: the peaks at batch 1 and 256 bracket a budget that fits some batches only.
  auto roomy = fit_batch_size(wide_moons(256, 1), 1LL << 40);
  BOOST_TEST(roomy.largest_batch == 256);
  BOOST_TEST(roomy.probes.size() == 9u);  // 1, 2, 4, ..., 256
  for (std::size_t i = 1; i < roomy.probes.size(); ++i)
    BOOST_TEST(roomy.probes[i].peak_bytes >= roomy.probes[i - 1].peak_bytes);
  auto at_1 = roomy.probes.front().peak_bytes;
  auto at_256 = roomy.probes.back().peak_bytes;
  BOOST_TEST(at_256 > at_1 + 1'000'000);  // 256 x two 1024-wide layers of activations and more

  auto budget = (at_1 + at_256) / 2;
  auto r = fit_batch_size(wide_moons(256, 1), budget);
  BOOST_TEST(r.largest_batch > 1);
  BOOST_TEST(r.largest_batch < 256);
  for (const auto& p : r.probes) {
    BOOST_TEST(p.fits == (p.batch_size <= r.largest_batch));
    if (p.fits)
      BOOST_TEST(p.peak_bytes <= budget);
  }
  // The suggestion keeps the effective batch: batch_size x accumulate_steps == 256.
  BOOST_TEST(r.exact);
  BOOST_TEST(r.suggested_batch * r.suggested_accumulate == 256);
  BOOST_TEST(r.suggested_batch <= r.largest_batch);
  BOOST_TEST(r.suggested_accumulate > 1);
}

BOOST_AUTO_TEST_CASE(the_effective_batch_counts_the_graphs_accumulation) {
  auto r = fit_batch_size(wide_moons(8, 4), 1LL << 40);
  BOOST_TEST(r.intended_effective_batch == 32);
  BOOST_TEST(r.largest_batch == 32);
  BOOST_TEST(r.suggested_batch == 32);
  BOOST_TEST(r.suggested_accumulate == 1);
}

BOOST_AUTO_TEST_CASE(a_budget_below_one_sample_fits_nothing) {
  auto r = fit_batch_size(wide_moons(64, 1), 64 * 1024);
  BOOST_TEST(r.largest_batch == 0);
  BOOST_REQUIRE(r.probes.size() == 1u);
  BOOST_TEST(!r.probes.front().fits);
}

BOOST_AUTO_TEST_CASE(bf16_holds_fewer_activation_bytes_than_fp32) {
  // The activation term: how much the peak grows from batch 32 to 256.
  auto growth = [](const fit_report& r) {
    return r.probes.back().peak_bytes - r.probes[5].peak_bytes;  // batch 256 less batch 32
  };
  auto fp32 = fit_batch_size(wide_moons(256, 1, "fp32"), 1LL << 40);
  auto bf16 = fit_batch_size(wide_moons(256, 1, "bf16"), 1LL << 40);
  BOOST_REQUIRE(fp32.probes.size() == 9u && bf16.probes.size() == 9u);
  BOOST_TEST(fp32.probes[5].batch_size == 32);
  BOOST_TEST(growth(bf16) > 0);
  BOOST_TEST(static_cast<double>(growth(bf16)) < 0.8 * static_cast<double>(growth(fp32)),
             "bf16 " << growth(bf16) << " vs fp32 " << growth(fp32));
}

BOOST_AUTO_TEST_CASE(a_graph_without_a_training_loop_is_refused) {
  auto g = std::get<validated_graph>(validate_graph(
    json{{"nodes", {{{"id", "data"}, {"type", "Dataset"}, {"params", {{"name", "moons"}}}}}}}));
  BOOST_CHECK_THROW((void)fit_batch_size(g, 1LL << 30), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
