// TrainingLoop's precision and loss scaler (training-memory seed, "Mixed precision" and "Resuming
// an fp16 run"): resolution against the device, bf16 autocast on the CPU, the scaler's skip,
// back-off and growth, and its state through CheckpointSaver and CheckpointLoader.
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "runtime/nodes/amp.hpp"
#include "runtime/precision.hpp"
#include "unit/runtime/linear_regression.hpp"
#include "unit/runtime/run_helpers.hpp"
#include "unit/runtime/saved_weights.hpp"
#include "testkit/home.hpp"

using cdui::runtime::precision;
using cdui::runtime::precision_slow_warning;
using cdui::runtime::resolve_precision;
using cdui::test::add_edge;
using cdui::test::add_node;
using cdui::test::linear_graph;
using cdui::test::load_weights;
using cdui::test::make_rows;
using cdui::test::params;
using cdui::test::recorded_run;
using cdui::test::require_succeeded;
using cdui::test::run_graph;
using cdui::test::write_csv;
using nlohmann::json;

namespace {

bool mentions(const std::string& text, const std::string& word) {
  return text.find(word) != std::string::npos;
}

/// The messages of the run's precision_fallback warnings.
std::vector<std::string> precision_warnings(const recorded_run& run) {
  std::vector<std::string> found;
  for (const auto& w : run.of_type("run_warning"))
    if (w["kind"] == "precision_fallback")
      found.push_back(w["message"].get<std::string>());
  return found;
}

/// linear_graph over a 32-row CSV in `home` whose first `overflowing` rows overflow the forward
/// pass, in batches of 8 (so the first batch holds them), loss_scale dynamic.
json overflow_graph(const cdui::test::temp_home& home, std::int64_t overflowing = 1) {
  auto csv = write_csv(home.path() / "overflow.csv", make_rows(32, 2, 11, 1.0, overflowing));
  auto doc = linear_graph(csv, 8, 1, 0.1);
  params(doc, "loop")["loss_scale"] = "dynamic";
  return doc;
}

/// A Linear(2 -> 1) regression over `n` generated samples in batches of 1, loss_scale dynamic:
/// n clean optimizer steps. Node ids as linear_graph's.
json clean_steps_graph(std::int64_t n) {
  json doc = linear_graph("unused.csv", 1, 1, 0.01);
  params(doc, "data") = {{"name", "regression"}, {"n_samples", n}, {"n_features", 2}, {"noise", 0.1}};
  params(doc, "loop")["loss_scale"] = "dynamic";
  params(doc, "loop")["progress_interval_ms"] = 100;
  return doc;
}

/// Adds a CheckpointSaver (ckpt.pt) of the loop's model, optimizer state and scaler state.
void save_checkpoint(json& doc) {
  add_node(doc, "ckpt", "CheckpointSaver", {{"path", "ckpt.pt"}});
  add_edge(doc, "loop.model", "ckpt.model");
  add_edge(doc, "loop.optimizer_state", "ckpt.optimizer_state");
  add_edge(doc, "loop.grad_scaler_state", "ckpt.grad_scaler_state");
}

/// Inserts a CheckpointLoader ("resume") of `checkpoint` between the Model and the loop, with its
/// optimizer and scaler state wired into the loop.
void resume_from(json& doc, const std::filesystem::path& checkpoint) {
  add_node(doc, "resume", "CheckpointLoader", {{"path", checkpoint.string()}});
  for (auto& e : doc["edges"])
    if (e["to"] == "loop.model")
      e["from"] = "resume.model";
  add_edge(doc, "model.model", "resume.model");
  add_edge(doc, "resume.optimizer_state", "loop.optimizer_state");
  add_edge(doc, "resume.grad_scaler_state", "loop.grad_scaler_state");
}

/// The moons graph with the test split also validating the loop after every epoch, in `p`.
json moons_in(const std::string& p, int epochs) {
  json doc = cdui::test::moons_graph();
  params(doc, "loop")["precision"] = p;
  params(doc, "loop")["epochs"] = epochs;
  add_edge(doc, "test_loader.dataloader", "loop.val_dataloader");
  return doc;
}

recorded_run run_in_temp(const json& doc, std::uint64_t seed = 1) {
  cdui::test::temp_home home;
  cdui::test::run_options options;
  options.seed = seed;
  auto run = run_graph(doc, home.path(), options);
  require_succeeded(run);
  return run;
}

} // namespace

BOOST_AUTO_TEST_SUITE(precision_test)

BOOST_AUTO_TEST_CASE(the_cpu_honours_fp32_and_bf16_and_falls_back_from_fp16) {
  for (const auto* device : {"cpu", "sim:0"}) {
    BOOST_TEST_CONTEXT(device) {
      auto fp32 = resolve_precision("fp32", device, false);
      BOOST_TEST((fp32.ran == precision::fp32));
      BOOST_TEST(!fp32.warning.has_value());
      auto bf16 = resolve_precision("bf16", device, false);
      BOOST_TEST((bf16.ran == precision::bf16));
      BOOST_TEST(!bf16.warning.has_value());
      auto fp16 = resolve_precision("fp16", device, false);
      BOOST_TEST((fp16.ran == precision::fp32));
      BOOST_TEST_REQUIRE(fp16.warning.has_value());
      BOOST_TEST(mentions(*fp16.warning, "fp16"), *fp16.warning);
      BOOST_TEST(mentions(*fp16.warning, "CPU"), *fp16.warning);
      BOOST_TEST(mentions(*fp16.warning, "fp32"), *fp16.warning);
    }
  }
}

BOOST_AUTO_TEST_CASE(cuda_honours_bf16_only_where_the_card_has_it) {
  for (const auto* device : {"cuda", "cuda:1"}) {
    BOOST_TEST_CONTEXT(device) {
      auto without = resolve_precision("bf16", device, false);
      BOOST_TEST((without.ran == precision::fp32));
      BOOST_TEST_REQUIRE(without.warning.has_value());
      BOOST_TEST(mentions(*without.warning, "bf16"), *without.warning);
      auto with = resolve_precision("bf16", device, true);
      BOOST_TEST((with.ran == precision::bf16));
      BOOST_TEST(!with.warning.has_value());
      for (bool has_bf16 : {false, true}) {
        auto fp16 = resolve_precision("fp16", device, has_bf16);
        BOOST_TEST((fp16.ran == precision::fp16));
        BOOST_TEST(!fp16.warning.has_value());
      }
      BOOST_TEST((resolve_precision("fp32", device, true).ran == precision::fp32));
      BOOST_TEST(!resolve_precision("fp32", device, true).warning.has_value());
    }
  }
}

BOOST_AUTO_TEST_CASE(mps_gets_fp32_for_anything_but_fp32) {
  for (const auto* requested : {"bf16", "fp16"}) {
    BOOST_TEST_CONTEXT(requested) {
      auto choice = resolve_precision(requested, "mps", false);
      BOOST_TEST((choice.ran == precision::fp32));
      BOOST_TEST_REQUIRE(choice.warning.has_value());
      BOOST_TEST(mentions(*choice.warning, requested), *choice.warning);
    }
  }
  auto fp32 = resolve_precision("fp32", "mps", false);
  BOOST_TEST((fp32.ran == precision::fp32));
  BOOST_TEST(!fp32.warning.has_value());
}

BOOST_AUTO_TEST_CASE(an_unknown_precision_gets_fp32_with_a_warning) {
  for (const auto* device : {"cpu", "cuda", "mps"}) {
    BOOST_TEST_CONTEXT(device) {
      auto choice = resolve_precision("fp8", device, true);
      BOOST_TEST((choice.ran == precision::fp32));
      BOOST_TEST_REQUIRE(choice.warning.has_value());
      BOOST_TEST(mentions(*choice.warning, "fp8"), *choice.warning);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_slow_bf16_probe_says_so_and_names_what_the_cpu_lacks) {
  auto lacking = cdui::devices::bf16_support_of("flags : avx2 avx512f\n");
  auto w = precision_slow_warning("loop", "cpu", 14.25, lacking);
  BOOST_REQUIRE(w.has_value());
  BOOST_TEST(*w == "Node loop (TrainingLoop) trains in bf16 on cpu, and a bf16 probe step took 14.2x as long "
                   "as in fp32, since this CPU has no avx512_bf16 or amx_bf16 to run bf16 in hardware: "
                   "expect the run to be about that much slower. It keeps bf16 as asked; set precision "
                   "fp32 for speed (bf16 halves the activation memory).");
  auto having = cdui::devices::bf16_support_of("flags : avx512_bf16 amx_bf16\n");
  auto odd = precision_slow_warning("loop", "sim:0", 3.0, having);
  BOOST_REQUIRE(odd.has_value());
  BOOST_TEST(odd->find("although this CPU has avx512_bf16 and amx_bf16, which this libtorch does not use")
             != std::string::npos, *odd);
  BOOST_TEST(!precision_slow_warning("loop", "cpu", 1.9, lacking).has_value());
  BOOST_TEST(!precision_slow_warning("loop", "cpu", 0.3, lacking).has_value());
}

BOOST_AUTO_TEST_CASE(the_bf16_probe_measures_a_ratio_and_leaves_the_run_alone) {
  // Its value belongs to the machine (0.3 on a CPU with AMX, 12-20 on one without bf16
  // instructions); what a test can hold is that it measured something and drew no random numbers.
  torch::manual_seed(5);
  auto expected = torch::randn({4});
  torch::manual_seed(5);
  auto ratio = cdui::runtime::nodes::cpu_bf16_slowdown();
  BOOST_TEST(ratio > 0.0);
  BOOST_TEST(torch::equal(torch::randn({4}), expected));
}

BOOST_AUTO_TEST_CASE(precision_names) {
  BOOST_TEST(std::string{cdui::runtime::to_string(precision::fp32)} == "fp32");
  BOOST_TEST(std::string{cdui::runtime::to_string(precision::bf16)} == "bf16");
  BOOST_TEST(std::string{cdui::runtime::to_string(precision::fp16)} == "fp16");
}

BOOST_AUTO_TEST_CASE(fp16_on_the_cpu_trains_in_fp32_with_a_warning) {
  json doc = cdui::test::moons_graph();
  params(doc, "loop")["precision"] = "fp16";
  params(doc, "loop")["epochs"] = 1;
  auto run = run_in_temp(doc);
  const auto& loop = run.metrics["loop"];
  BOOST_TEST(loop["precision"] == "fp32");
  BOOST_TEST(loop["precision_requested"] == "fp16");
  BOOST_TEST(run.config("loop")["precision"] == "fp32");
  BOOST_TEST(run.config("loop")["precision_requested"] == "fp16");
  auto warnings = precision_warnings(run);
  BOOST_TEST_REQUIRE(warnings.size() == 1u);
  BOOST_TEST(mentions(warnings[0], "fp16"), warnings[0]);
  BOOST_TEST(mentions(warnings[0], "CPU"), warnings[0]);
  BOOST_TEST(mentions(warnings[0], "loop"), warnings[0]);  // names the node
  // loss_scale auto scales only fp16, and fp32 is what ran: no scaler.
  BOOST_TEST(!loop.contains("skipped_steps"));
  BOOST_TEST(!loop.contains("loss_scale"));
  BOOST_TEST(run.config("loop")["loss_scale"] == "off");
}

BOOST_AUTO_TEST_CASE(fp32_and_bf16_report_no_precision_requested) {
  for (const auto* p : {"fp32", "bf16"}) {
    BOOST_TEST_CONTEXT(p) {
      json doc = cdui::test::moons_graph();
      params(doc, "loop")["precision"] = p;
      params(doc, "loop")["epochs"] = 1;
      auto run = run_in_temp(doc);
      BOOST_TEST(run.metrics["loop"]["precision"] == p);
      BOOST_TEST(run.config("loop")["precision"] == p);
      BOOST_TEST(!run.metrics["loop"].contains("precision_requested"));
      BOOST_TEST(!run.config("loop").contains("precision_requested"));
      BOOST_TEST(precision_warnings(run).empty());
      // bf16 keeps float32's exponent range: no scaler under auto.
      BOOST_TEST(!run.metrics["loop"].contains("skipped_steps"));
    }
  }
}

BOOST_AUTO_TEST_CASE(an_overflowed_step_is_skipped_and_halves_the_scale) {
  cdui::test::temp_home data, home, clean_home;
  auto run = run_graph(overflow_graph(data), home.path());
  require_succeeded(run);
  const auto& loop = run.metrics["loop"];
  BOOST_TEST(run.config("loop")["loss_scale"] == 65536.0);
  BOOST_TEST(loop["skipped_steps"] == 1);
  BOOST_TEST(loop["loss_scale"] == 32768.0);
  BOOST_TEST(loop["total_steps"] == 4);  // a skipped step still counts as a step taken
  auto init = load_weights(home.path() / "checkpoints" / "init.pt");
  auto trained = load_weights(home.path() / "checkpoints" / "trained.pt");
  BOOST_TEST(cdui::test::all_finite(trained));
  BOOST_TEST(cdui::test::max_difference(trained, init) > 1e-3);  // the other batches trained

  // The skipped step changed nothing: the weights are those of the three clean batches alone,
  // trained without a scaler from the same initial weights.
  auto clean_rows = cdui::test::slice(make_rows(32, 2, 11), 8, 24);
  auto clean = linear_graph(write_csv(data.path() / "clean.csv", clean_rows), 8, 1, 0.1);
  params(clean, "loop")["loss_scale"] = "off";
  auto reference = run_graph(clean, clean_home.path());
  require_succeeded(reference);
  BOOST_TEST_REQUIRE(cdui::test::same_weights(load_weights(clean_home.path() / "checkpoints" / "init.pt"), init));
  BOOST_TEST(cdui::test::max_difference(
               trained, load_weights(clean_home.path() / "checkpoints" / "trained.pt")) <= 1e-6);
}

BOOST_AUTO_TEST_CASE(the_scale_grows_after_2000_clean_steps) {
  auto grown = run_in_temp(clean_steps_graph(2000));
  BOOST_TEST(grown.metrics["loop"]["total_steps"] == 2000);
  BOOST_TEST(grown.metrics["loop"]["skipped_steps"] == 0);
  BOOST_TEST(grown.metrics["loop"]["loss_scale"] == 131072.0);

  auto doc = clean_steps_graph(2000);
  params(doc, "loop")["max_steps"] = 1999;
  auto short_of = run_in_temp(doc);
  BOOST_TEST(short_of.metrics["loop"]["total_steps"] == 1999);
  BOOST_TEST(short_of.metrics["loop"]["skipped_steps"] == 0);
  BOOST_TEST(short_of.metrics["loop"]["loss_scale"] == 65536.0);
}

BOOST_AUTO_TEST_CASE(a_fixed_scale_stays_and_is_divided_back_out) {
  cdui::test::temp_home scaled_home, plain_home;
  auto trained_with = [](const json& scale) {
    json doc = moons_in("fp32", 2);
    params(doc, "loop")["loss_scale"] = scale;
    add_node(doc, "save", "ModelSaver", {{"path", "trained.pt"}});
    add_edge(doc, "loop.model", "save.model");
    return doc;
  };
  auto scaled = run_graph(trained_with(1024), scaled_home.path());
  auto plain = run_graph(trained_with("off"), plain_home.path());
  require_succeeded(scaled);
  require_succeeded(plain);
  BOOST_TEST(scaled.config("loop")["loss_scale"] == 1024.0);
  BOOST_TEST(scaled.metrics["loop"]["loss_scale"] == 1024.0);
  BOOST_TEST(scaled.metrics["loop"]["skipped_steps"] == 0);
  BOOST_TEST(!plain.metrics["loop"].contains("loss_scale"));
  BOOST_TEST(plain.config("loop")["loss_scale"] == "off");
  // The scale is divided back out before the step: the same weights and losses as without it.
  auto scaled_weights = load_weights(scaled_home.path() / "checkpoints" / "trained.pt");
  auto plain_weights = load_weights(plain_home.path() / "checkpoints" / "trained.pt");
  BOOST_TEST(cdui::test::max_difference(scaled_weights, plain_weights) <= 1e-6);
  BOOST_TEST(scaled.metrics["loop"]["final_train_loss"].get<double>()
             == plain.metrics["loop"]["final_train_loss"].get<double>(),
             boost::test_tools::tolerance(1e-5));
  BOOST_TEST(scaled.metrics["eval"]["loss"].get<double>()
             == plain.metrics["eval"]["loss"].get<double>(), boost::test_tools::tolerance(1e-5));

  // A fixed scale also skips an overflowed step, but never changes.
  cdui::test::temp_home data;
  auto overflow = overflow_graph(data);
  params(overflow, "loop")["loss_scale"] = 1024;
  auto run = run_in_temp(overflow);
  BOOST_TEST(run.metrics["loop"]["skipped_steps"] == 1);
  BOOST_TEST(run.metrics["loop"]["loss_scale"] == 1024.0);
}

BOOST_AUTO_TEST_CASE(the_scale_round_trips_through_a_checkpoint) {
  cdui::test::temp_home data, first, second, fresh_home;
  auto doc = overflow_graph(data);
  save_checkpoint(doc);
  auto saved = run_graph(doc, first.path());
  require_succeeded(saved);
  BOOST_TEST_REQUIRE(saved.metrics["loop"]["loss_scale"] == 32768.0);
  auto ckpt = first.path() / "checkpoints" / "ckpt.pt";

  // 5 clean steps after the checkpoint: the resumed run starts and ends at 32768.
  auto resumed_doc = clean_steps_graph(5);
  resume_from(resumed_doc, ckpt);
  auto resumed = run_graph(resumed_doc, second.path());
  require_succeeded(resumed);
  BOOST_TEST(resumed.metrics["resume"]["loss_scale"] == 32768.0);
  BOOST_TEST(resumed.config("loop")["loss_scale"] == 32768.0);
  BOOST_TEST(resumed.metrics["loop"]["loss_scale"] == 32768.0);

  // Without the checkpoint a run starts at 2^16.
  auto fresh = run_graph(clean_steps_graph(5), fresh_home.path());
  require_succeeded(fresh);
  BOOST_TEST(fresh.config("loop")["loss_scale"] == 65536.0);
}

BOOST_AUTO_TEST_CASE(the_growth_tracker_round_trips_too) {
  // The saved run skipped its first step and then took 3 clean ones: 1997 more clean steps make
  // the 2000 after which the scale grows, whereas a fresh tracker would need 2000.
  cdui::test::temp_home data, first, second;
  auto doc = overflow_graph(data);
  save_checkpoint(doc);
  require_succeeded(run_graph(doc, first.path()));
  auto resumed_doc = clean_steps_graph(1997);
  resume_from(resumed_doc, first.path() / "checkpoints" / "ckpt.pt");
  auto resumed = run_graph(resumed_doc, second.path());
  require_succeeded(resumed);
  BOOST_TEST(resumed.config("loop")["loss_scale"] == 32768.0);
  BOOST_TEST(resumed.metrics["loop"]["skipped_steps"] == 0);
  BOOST_TEST(resumed.metrics["loop"]["loss_scale"] == 65536.0);
}

BOOST_AUTO_TEST_CASE(a_run_resumed_with_a_scale_of_1024_starts_at_1024) {
  // Six overflowing rows in batches of 1: six skips halve 2^16 to 2^10.
  cdui::test::temp_home data, first, second;
  auto csv = write_csv(data.path() / "six.csv", make_rows(10, 2, 12, 1.0, 6));
  auto doc = linear_graph(csv, 1, 1, 0.1);
  params(doc, "loop")["loss_scale"] = "dynamic";
  save_checkpoint(doc);
  auto saved = run_graph(doc, first.path());
  require_succeeded(saved);
  BOOST_TEST(saved.metrics["loop"]["skipped_steps"] == 6);
  BOOST_TEST_REQUIRE(saved.metrics["loop"]["loss_scale"] == 1024.0);

  auto resumed_doc = clean_steps_graph(5);
  resume_from(resumed_doc, first.path() / "checkpoints" / "ckpt.pt");
  auto resumed = run_graph(resumed_doc, second.path());
  require_succeeded(resumed);
  BOOST_TEST(resumed.metrics["resume"]["loss_scale"] == 1024.0);
  BOOST_TEST(resumed.config("loop")["loss_scale"] == 1024.0);
}

BOOST_AUTO_TEST_CASE(bf16_on_the_cpu_trains_about_as_well_as_fp32) {
  auto fp32 = run_in_temp(moons_in("fp32", 5), 3);
  auto bf16 = run_in_temp(moons_in("bf16", 5), 3);
  BOOST_TEST(bf16.metrics["loop"]["precision"] == "bf16");
  BOOST_TEST(bf16.config("loop")["precision"] == "bf16");
  auto loss_32 = fp32.metrics["loop"]["final_train_loss"].get<double>();
  auto loss_16 = bf16.metrics["loop"]["final_train_loss"].get<double>();
  BOOST_TEST(std::abs(loss_16 - loss_32) <= 0.05 * loss_32, loss_16 << " vs fp32 " << loss_32);
  // bf16 really ran: the numbers are not bitwise those of fp32.
  BOOST_TEST(loss_16 != loss_32);
  auto curve = bf16.series("loop", "train_loss");
  BOOST_TEST_REQUIRE(curve.size() == 5u);
  BOOST_TEST(curve.back() < curve.front());
}

BOOST_AUTO_TEST_CASE(bf16_trains_layers_large_enough_for_onednn) {
  // Small bf16 matmuls run in ATen's own kernels, larger ones in oneDNN, which takes its scratch
  // memory through the CPU allocator's raw interface.
  json doc = cdui::test::moons_graph();
  params(doc, "loop")["precision"] = "bf16";
  params(doc, "loop")["epochs"] = 1;
  params(doc, "loader")["batch_size"] = 256;
  params(doc, "model")["layers"][0]["out_features"] = 64;
  auto run = run_in_temp(doc);
  BOOST_TEST(run.metrics["loop"]["precision"] == "bf16");
  BOOST_TEST(std::isfinite(run.metrics["loop"]["final_train_loss"].get<double>()));
}

BOOST_AUTO_TEST_CASE(validation_runs_under_the_same_autocast) {
  // EvaluateModel after the loop runs in fp32 on the same weights and the same split. In fp32 the
  // loop's last val_loss is bitwise the evaluation's; in bf16 it differs (it ran under autocast),
  // but only by bf16's rounding.
  auto fp32 = run_in_temp(moons_in("fp32", 2));
  auto val_32 = fp32.series("loop", "val_loss");
  BOOST_TEST_REQUIRE(val_32.size() == 2u);
  BOOST_TEST(val_32.back() == fp32.metrics["eval"]["loss"].get<double>());

  auto bf16 = run_in_temp(moons_in("bf16", 2));
  auto val_16 = bf16.series("loop", "val_loss");
  BOOST_TEST_REQUIRE(val_16.size() == 2u);
  for (double v : val_16)
    BOOST_TEST(std::isfinite(v));
  BOOST_TEST(bf16.metrics["loop"]["final_val_loss"].get<double>() == val_16.back());
  BOOST_TEST(bf16.series("loop", "val_accuracy").size() == 2u);
  auto eval_loss = bf16.metrics["eval"]["loss"].get<double>();
  BOOST_TEST(val_16.back() != eval_loss);
  BOOST_TEST(val_16.back() == eval_loss, boost::test_tools::tolerance(0.05));
}

BOOST_AUTO_TEST_CASE(bf16_trains_every_layer_type_on_the_cpu) {
  // LayerNorm among them: libtorch 1.13's CPU autocast has no rule for it, and its kernel refused a
  // bf16 input with fp32 weights ("expected scalar type BFloat16 but found Float").
  using nlohmann::json;
  cdui::test::temp_home home;
  json bf16_loop = {{"epochs", 1}, {"max_steps", 4}, {"precision", "bf16"}};
  json vectors = json::array({{{"type", "Linear"}, {"out_features", 32}}, {{"type", "LayerNorm"}},
                              {{"type", "GELU"}}, {{"type", "Dropout"}, {"p", 0.1}},
                              {{"type", "Linear"}, {"out_features", 16}}, {{"type", "BatchNorm1d"}},
                              {{"type", "Tanh"}}, {{"type", "Linear"}, {"out_features", 16}}, {{"type", "ReLU"}},
                              {{"type", "LayerNorm"}}, {{"type", "Linear"}, {"out_features", 4}}});
  json images = json::array({{{"type", "Conv2d"}, {"out_channels", 4}, {"kernel_size", 3}, {"padding", 1}},
                             {{"type", "BatchNorm2d"}}, {{"type", "ReLU"}}, {{"type", "MaxPool2d"}, {"kernel_size", 2}},
                             {{"type", "Conv2d"}, {"out_channels", 4}, {"kernel_size", 3}, {"stride", 2}},
                             {{"type", "Flatten"}}, {{"type", "LayerNorm"}}, {{"type", "Linear"}, {"out_features", 10}}});
  json blobs = {{"name", "blobs"}, {"n_samples", 256}, {"n_features", 6}, {"n_classes", 4}};
  json fashion = {{"name", "fashion_mnist"}};
  for (const auto& [name, data, layers] : {std::tuple{"vectors", blobs, vectors}, std::tuple{"images", fashion, images}}) {
    BOOST_TEST_CONTEXT(name) {
      auto doc = cdui::test::training_graph_json(data, {{"batch_size", 32}}, layers, {{"name", "adam"}, {"lr", 0.01}},
                                                 bf16_loop);
      auto run = cdui::test::run_graph(doc, home.path() / name);
      cdui::test::require_succeeded(run);
      BOOST_TEST(run.metrics["loop"]["precision"] == "bf16");
      BOOST_TEST(run.metrics["loop"]["total_steps"] == 4);
      auto losses = run.series("loop", "train_loss_batch");
      for (auto loss : losses)
        BOOST_TEST(std::isfinite(loss));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
