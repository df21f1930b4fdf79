// `cdui fit`: real training steps on a simulated card of the given size.
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "devices/host_inventory.hpp"
#include "runtime/engine.hpp"
#include "runtime/fit.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"

using nlohmann::json;
using namespace cdui::runtime;

namespace {

validated_graph wide_moons(std::int64_t batch, std::int64_t accumulate,
                           const std::string& precision = "fp32") {
  cdui::test::wide_moons o;
  o.batch = static_cast<int>(batch);
  o.accumulate = static_cast<int>(accumulate);
  o.precision = precision;
  return std::get<validated_graph>(validate_graph(cdui::test::wide_moons_graph_json(o)));
}

/// Trains `doc` as a run on sim:0 of a host with one sim card of `card_bytes` is trained: with the
/// context a server makes for it (the inventory's cards, the cores of the card's slot) and the
/// engine. Returns the loop's peak on the card; fails the test when the run does not succeed.
std::int64_t train_on_card(const json& doc, std::int64_t card_bytes) {
  auto host = cdui::devices::host_inventory::probe("1x" + std::to_string(card_bytes) + "B");
  cdui::test::temp_home dir;
  run_context ctx;
  ctx.run_id = "fit-check";
  ctx.run_dir = dir.path();
  ctx.device = "sim:0";
  ctx.seed = 1;
  ctx.num_threads = host.cores_per_run("sim:0");
  ctx.host = host.counts();
  ctx.emit = [](const std::string&, const json&) {};
  auto outcome = execute(std::get<validated_graph>(validate_graph(doc)), ctx);
  BOOST_REQUIRE_MESSAGE(outcome.status == cdui::run_status::succeeded, outcome.error);
  auto metrics = json::parse(outcome.final_metrics);
  return metrics["loop"]["peak_memory_bytes"]["sim:0"].get<std::int64_t>();
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

BOOST_AUTO_TEST_CASE(the_ladder_halves_on_out_of_memory_keeping_the_effective_batch_until_a_rung_trains) {
  auto roomy = fit_batch_size(wide_moons(256, 1), 1LL << 40);
  auto at_1 = roomy.probes.front().peak_bytes;
  auto at_256 = roomy.probes.back().peak_bytes;
  auto r = fit_ladder(wide_moons(256, 1), (at_1 + at_256) / 2);
  BOOST_REQUIRE(r.trained);
  BOOST_REQUIRE(r.rungs.size() >= 2u);
  BOOST_TEST(r.rungs.front().batch_size == 256);  // the graph's batch size first
  BOOST_TEST(r.rungs.front().accumulate_steps == 1);
  for (std::size_t i = 0; i + 1 < r.rungs.size(); ++i) {
    BOOST_TEST(!r.rungs[i].fits);
    BOOST_TEST(r.rungs[i + 1].batch_size == r.rungs[i].batch_size / 2);
  }
  for (const auto& rung : r.rungs)
    BOOST_TEST(rung.batch_size * rung.accumulate_steps == 256);  // the effective batch kept
  // The rung that trained is what a real run of that batch on such a card does.
  auto last = r.rungs.back();
  BOOST_TEST(last.peak_bytes <= (at_1 + at_256) / 2);
  BOOST_TEST(last.peak_bytes > 0);

  auto none = fit_ladder(wide_moons(4, 1), 1024);  // not even batch 1
  BOOST_TEST(!none.trained);
  BOOST_TEST(none.rungs.back().batch_size == 1);
  BOOST_TEST(none.rungs.size() == 3u);  // 4, 2, 1
  BOOST_TEST(none.rungs.back().accumulate_steps == 4);
}

BOOST_AUTO_TEST_CASE(throughput_is_measured_after_the_warm_up_at_each_batch_that_fits) {
  auto roomy = fit_batch_size(wide_moons(256, 1), 1LL << 40);
  auto at_16 = roomy.probes[4].peak_bytes;
  auto points = fit_throughput(wide_moons(256, 1), at_16, {1, 16, 256}, 0.2);
  BOOST_REQUIRE_EQUAL(points.size(), 3u);
  for (std::size_t i = 0; i < 2; ++i) {
    BOOST_TEST(points[i].fits);
    BOOST_TEST(points[i].samples_per_s > 0.0);
    BOOST_TEST(points[i].peak_bytes > 0);
    BOOST_TEST(points[i].peak_bytes <= at_16);
  }
  BOOST_TEST(points[1].peak_bytes > points[0].peak_bytes);
  BOOST_TEST(!points[2].fits);  // out of memory: reported, not measured
  BOOST_TEST(points[2].samples_per_s == 0.0);

  // One batch an epoch (the whole set of 1024): measured across epochs all the same.
  auto whole = fit_throughput(wide_moons(256, 1), 1LL << 40, {1024}, 0.2);
  BOOST_REQUIRE_EQUAL(whole.size(), 1u);
  BOOST_TEST(whole[0].fits);
  BOOST_TEST(whole[0].samples_per_s > 0.0);
}

BOOST_AUTO_TEST_CASE(a_graph_without_a_training_loop_is_refused) {
  auto g = std::get<validated_graph>(validate_graph(
    json{{"nodes", {{{"id", "data"}, {"type", "Dataset"}, {"params", {{"name", "moons"}}}}}}}));
  BOOST_CHECK_THROW((void)fit_batch_size(g, 1LL << 30), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(what_fit_finds_trains_on_the_card_past_adams_first_step) {
  // Adam's two state tensors per parameter exist from the first step on, and the gradients stay
  // (zeroed, not freed): every later step holds them with its activations. That is the peak.
  cdui::test::wide_moons o;
  o.optimizer = "adam";
  auto graph = std::get<validated_graph>(validate_graph(cdui::test::wide_moons_graph_json(o)));
  auto roomy = fit_batch_size(graph, 1LL << 40);
  auto budget = (roomy.probes.front().peak_bytes + roomy.probes.back().peak_bytes) / 2;
  auto r = fit_batch_size(graph, budget);
  BOOST_REQUIRE(r.largest_batch > 1);
  BOOST_REQUIRE(r.largest_batch < 256);
  BOOST_REQUIRE(r.suggested_accumulate > 1);
  BOOST_TEST(r.suggested_batch * r.suggested_accumulate == 256);
  // The suggestion was trained itself, at its accumulate_steps, and that probe is its figure.
  const auto& check = r.probes.back();
  BOOST_TEST(check.batch_size == r.suggested_batch);
  BOOST_TEST(check.accumulate_steps == r.suggested_accumulate);
  BOOST_TEST(r.suggested_peak_bytes == check.peak_bytes);
  BOOST_TEST(r.suggested_peak_bytes <= budget);

  // Trained as a run on a card of that size for two whole epochs (the suggestion: 8 optimizer
  // steps), the suggestion and the largest batch that fits with one batch per step.
  std::int64_t largest_peak = 0;
  for (const auto& p : r.probes)
    if (p.batch_size == r.largest_batch && p.accumulate_steps == 1)
      largest_peak = p.peak_bytes;
  struct trial {
    std::int64_t batch, accumulate, predicted;
  };
  for (auto t : {trial{r.suggested_batch, r.suggested_accumulate, r.suggested_peak_bytes},
                 trial{r.largest_batch, 1, largest_peak}}) {
    o.batch = static_cast<int>(t.batch);
    o.accumulate = static_cast<int>(t.accumulate);
    o.epochs = 2;
    o.device = "sim:0";
    auto peak = train_on_card(cdui::test::wide_moons_graph_json(o), budget);
    BOOST_TEST(peak <= t.predicted, "batch " << t.batch << " x " << t.accumulate << ": trained at "
                                             << peak << ", fit measured " << t.predicted);
  }
}

BOOST_AUTO_TEST_SUITE_END()
