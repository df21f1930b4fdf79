// TrainingLoop's accumulate_steps (training-memory seed, "Gradient accumulation"): N micro-batches,
// each loss divided by N, one optimizer step; the results are compared with steps computed by hand.
#include <atomic>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "unit/runtime/linear_regression.hpp"
#include "unit/runtime/run_helpers.hpp"
#include "unit/runtime/saved_weights.hpp"
#include "testkit/home.hpp"

using cdui::test::linear_from;
using cdui::test::linear_graph;
using cdui::test::load_weights;
using cdui::test::make_rows;
using cdui::test::max_difference;
using cdui::test::mse_gradient;
using cdui::test::params;
using cdui::test::recorded_run;
using cdui::test::regression_rows;
using cdui::test::require_succeeded;
using cdui::test::run_graph;
using cdui::test::sgd_step;
using cdui::test::slice;
using cdui::test::write_csv;
using nlohmann::json;

namespace {

constexpr std::uint64_t seed = 7;

/// A run of linear_graph in its own folder, with the weights before and after training.
struct trained {
  recorded_run run;
  cdui::test::named_tensors init;
  cdui::test::named_tensors weights;
};

trained train(const json& doc, cdui::test::run_options options = {}) {
  cdui::test::temp_home home;
  options.seed = seed;
  auto run = run_graph(doc, home.path(), options);
  require_succeeded(run);
  auto dir = home.path() / "checkpoints";
  return {std::move(run), load_weights(dir / "init.pt"), load_weights(dir / "trained.pt")};
}

/// linear_graph over `rows` written to a CSV in `home`.
json graph_over(const cdui::test::temp_home& home, const regression_rows& rows,
                std::int64_t batch_size, std::int64_t accumulate_steps, double lr = 0.1) {
  return linear_graph(write_csv(home.path() / "data.csv", rows), batch_size, accumulate_steps, lr);
}

} // namespace

BOOST_AUTO_TEST_SUITE(accumulation_test)

BOOST_AUTO_TEST_CASE(batch_8_times_4_lands_on_the_weights_of_batch_32) {
  cdui::test::temp_home data;
  auto rows = make_rows(32, 3, 1);
  auto accumulated = train(graph_over(data, rows, 8, 4));
  auto full = train(graph_over(data, rows, 32, 1));

  // The same seed draws the same initial weights.
  BOOST_TEST_REQUIRE(cdui::test::same_weights(accumulated.init, full.init));
  BOOST_TEST(max_difference(accumulated.weights, full.weights) <= 1e-6);
  // And both are the full-batch gradient step, computed by hand.
  auto start = linear_from(accumulated.init);
  auto expected = sgd_step(start, mse_gradient(start, rows), 0.1);
  BOOST_TEST(max_difference(linear_from(accumulated.weights), expected) <= 1e-6);
  BOOST_TEST(max_difference(linear_from(full.weights), expected) <= 1e-6);
  // The step moved the weights: the comparison is not between two untrained models.
  BOOST_TEST(max_difference(linear_from(full.weights), start) > 1e-3);

  const auto& loop = accumulated.run.metrics["loop"];
  BOOST_TEST(loop["total_steps"] == 1);
  BOOST_TEST(loop["total_batches"] == 4);
  BOOST_TEST(full.run.metrics["loop"]["total_steps"] == 1);
  BOOST_TEST(full.run.metrics["loop"]["total_batches"] == 1);
}

BOOST_AUTO_TEST_CASE(a_short_window_at_the_epoch_end_is_stepped_divided_by_n) {
  // 16 samples in batches of 4 at N 3: a window of batches 1-3, then a short window of batch 4
  // whose loss is still divided by 3, so it takes a third of a full batch's step.
  cdui::test::temp_home data;
  auto rows = make_rows(16, 3, 2);
  auto result = train(graph_over(data, rows, 4, 3));
  const auto& loop = result.run.metrics["loop"];
  BOOST_TEST(loop["total_steps"] == 2);
  BOOST_TEST(loop["total_batches"] == 4);
  BOOST_TEST(loop["total_epochs_run"] == 1);

  auto start = linear_from(result.init);
  auto after_first = sgd_step(start, mse_gradient(start, slice(rows, 0, 12)), 0.1);
  auto expected = sgd_step(after_first, mse_gradient(after_first, slice(rows, 12, 4)), 0.1 / 3);
  auto got = linear_from(result.weights);
  BOOST_TEST(max_difference(got, expected) <= 1e-6);
  // Not the undivided step of the last batch, and not a dropped window.
  auto undivided = sgd_step(after_first, mse_gradient(after_first, slice(rows, 12, 4)), 0.1);
  BOOST_TEST(max_difference(got, undivided) > 1e-4);
  BOOST_TEST(max_difference(got, after_first) > 1e-4);

  // The progress events count optimizer steps: 0, 0, 1 after the first window, 2 after the last.
  std::vector<std::int64_t> steps;
  for (const auto& p : result.run.of_type("progress"))
    steps.push_back(p["step"].get<std::int64_t>());
  BOOST_TEST(steps == std::vector<std::int64_t>({0, 0, 1, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(clipping_applies_once_to_the_whole_accumulated_gradient) {
  // Large targets make the gradient's norm far above 0.01. Clipped at step time over the window,
  // the weights move by exactly lr x 0.01; clipping each of the 4 micro-batches would let them
  // move by up to 4 times that.
  cdui::test::temp_home data;
  auto rows = make_rows(32, 3, 3, 100.0);
  auto doc = graph_over(data, rows, 8, 4);
  params(doc, "loop")["grad_clip_norm"] = 0.01;
  auto result = train(doc);
  BOOST_TEST(result.run.metrics["loop"]["total_steps"] == 1);

  auto start = linear_from(result.init);
  auto got = linear_from(result.weights);
  BOOST_TEST(cdui::test::change_norm(got, start) == 0.1 * 0.01, boost::test_tools::tolerance(1e-3));
  BOOST_TEST(std::abs(cdui::test::change_norm(got, start) - 0.1 * 0.01) <= 1e-6);
  // In the direction of the full-batch gradient.
  auto g = mse_gradient(start, rows);
  auto norm = std::sqrt(g.w.pow(2).sum().item<double>() + g.b.pow(2).sum().item<double>());
  BOOST_TEST_REQUIRE(norm > 1.0);
  auto expected = sgd_step(start, {g.w / norm * 0.01, g.b / norm * 0.01}, 0.1);
  BOOST_TEST(max_difference(got, expected) <= 1e-6);
}

BOOST_AUTO_TEST_CASE(max_steps_counts_optimizer_steps_not_batches) {
  cdui::test::temp_home data;
  auto rows = make_rows(64, 2, 4);  // 16 batches of 4 per epoch: 6 steps at N 3
  for (int k = 1; k <= 5; ++k) {
    BOOST_TEST_CONTEXT("max_steps " << k) {
      auto doc = graph_over(data, rows, 4, 3);
      params(doc, "loop")["max_steps"] = k;
      params(doc, "loop")["epochs"] = 3;
      cdui::test::temp_home home;
      auto run = run_graph(doc, home.path());
      require_succeeded(run);
      const auto& loop = run.metrics["loop"];
      BOOST_TEST(loop["total_steps"] == k);
      BOOST_TEST(loop["total_batches"] == 3 * k);
      BOOST_TEST(loop["stopped_at_max_steps"] == true);
      BOOST_TEST(run.of_type("progress").back()["step"] == k);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_reported_loss_is_undivided) {
  // Batch 8 x N 4 and batch 32 x N 1 take the same steps, so they draw the same loss curve: the
  // loss each micro-batch reports is its own, not divided by N.
  cdui::test::temp_home data;
  auto rows = make_rows(32, 3, 5);
  auto accumulated_doc = graph_over(data, rows, 8, 4);
  auto full_doc = graph_over(data, rows, 32, 1);
  params(accumulated_doc, "loop")["epochs"] = 4;
  params(full_doc, "loop")["epochs"] = 4;
  auto accumulated = train(accumulated_doc).run.series("loop", "train_loss");
  auto full = train(full_doc).run.series("loop", "train_loss");
  BOOST_TEST_REQUIRE(accumulated.size() == 4u);
  BOOST_TEST_REQUIRE(full.size() == 4u);
  for (std::size_t e = 0; e < 4; ++e)
    BOOST_TEST(accumulated[e] == full[e], boost::test_tools::tolerance(1e-5));
  BOOST_TEST(full[3] < full[0]);  // it trains
}

BOOST_AUTO_TEST_CASE(one_batch_per_epoch_draws_the_same_loss_curve_at_n_1_and_n_4) {
  // With one batch per epoch every window is short: at N 4 it is stepped divided by 4. The
  // reported loss is undivided, so the first epoch's loss is the same at N 1 and N 4, and with
  // the learning rate raised 4 times to make up for the division the whole curve is the same.
  cdui::test::temp_home data;
  auto rows = make_rows(16, 3, 6);
  auto at_1 = graph_over(data, rows, 16, 1, 0.1);
  auto at_4 = graph_over(data, rows, 16, 4, 0.1);
  auto at_4_lr = graph_over(data, rows, 16, 4, 0.4);
  for (auto* doc : {&at_1, &at_4, &at_4_lr})
    params(*doc, "loop")["epochs"] = 5;
  auto curve_1 = train(at_1).run.series("loop", "train_loss");
  auto curve_4 = train(at_4).run.series("loop", "train_loss");
  auto curve_4_lr = train(at_4_lr).run.series("loop", "train_loss");
  BOOST_TEST_REQUIRE(curve_1.size() == 5u);
  BOOST_TEST_REQUIRE(curve_4.size() == 5u);
  BOOST_TEST_REQUIRE(curve_4_lr.size() == 5u);
  BOOST_TEST(curve_4[0] == curve_1[0]);
  // At the same learning rate only the first epoch agrees: each short window's step is a quarter.
  BOOST_TEST(curve_4[1] != curve_1[1]);
  for (std::size_t e = 0; e < 5; ++e)
    BOOST_TEST(curve_4_lr[e] == curve_1[e], boost::test_tools::tolerance(1e-5));
  BOOST_TEST(curve_1[4] < curve_1[0]);  // it trains
}

BOOST_AUTO_TEST_CASE(a_stop_discards_the_pending_window) {
  // 8 batches at N 4: the Stop comes after batch 6, inside the second window. The weights left are
  // those of one step (max_steps 1), not one step plus the two pending micro-batches.
  cdui::test::temp_home data;
  auto rows = make_rows(32, 3, 8);
  auto doc = graph_over(data, rows, 4, 4);
  cdui::test::run_options stop_at_6;
  stop_at_6.on_event = [](const cdui::test::recorded_event& e, std::atomic<bool>& stop) {
    if (e.type == "progress" && e.data["batch"] == 6)
      stop = true;
    // Only here to read the weights the Stop left: once the loop has reported itself stopped,
    // lower the flag again so the engine goes on to the ModelSaver after it.
    if (e.type == "node_status" && e.data["node"] == "loop" && e.data["status"] == "stopped")
      stop = false;
  };
  auto stopped = train(doc, stop_at_6);
  const auto& loop = stopped.run.metrics["loop"];
  BOOST_TEST(loop["total_steps"] == 1);
  BOOST_TEST(loop["total_batches"] == 6);
  BOOST_TEST(loop["stopped_at_max_steps"] == false);
  BOOST_TEST(stopped.run.of_type("progress").size() == 6u);

  auto one_step_doc = doc;
  params(one_step_doc, "loop")["max_steps"] = 1;
  auto one_step = train(one_step_doc);
  BOOST_TEST(one_step.run.metrics["loop"]["total_steps"] == 1);
  BOOST_TEST(cdui::test::same_weights(stopped.weights, one_step.weights));
  // And that is the first window's step by hand.
  auto start = linear_from(stopped.init);
  auto expected = sgd_step(start, mse_gradient(start, slice(rows, 0, 16)), 0.1);
  BOOST_TEST(max_difference(linear_from(stopped.weights), expected) <= 1e-6);
}

BOOST_AUTO_TEST_CASE(the_effective_batch_size_is_batch_size_times_n) {
  cdui::test::temp_home data, home;
  auto doc = graph_over(data, make_rows(40, 2, 9), 5, 3);
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  auto config = run.config("loop");
  BOOST_TEST(config["accumulate_steps"] == 3);
  BOOST_TEST(config["batch_size"] == 5);
  BOOST_TEST(config["effective_batch_size"] == 15);
  BOOST_TEST(run.metrics["loop"]["effective_batch_size"] == 15);
  BOOST_TEST(run.metrics["loop"]["total_batches"] == 8);
  BOOST_TEST(run.metrics["loop"]["total_steps"] == 3);  // 3 + 3 + a short window of 2

  // At N 1 (the default) the effective batch is the batch.
  auto plain = graph_over(data, make_rows(40, 2, 9), 5, 1);
  params(plain, "loop").erase("accumulate_steps");
  auto one = run_graph(plain, home.path());
  require_succeeded(one);
  BOOST_TEST(one.config("loop")["accumulate_steps"] == 1);
  BOOST_TEST(one.config("loop")["effective_batch_size"] == 5);
  BOOST_TEST(one.metrics["loop"]["effective_batch_size"] == 5);
}

BOOST_AUTO_TEST_SUITE_END()
