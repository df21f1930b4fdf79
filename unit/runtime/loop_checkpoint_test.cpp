// A TrainingLoop's own checkpoints (issue 15; docs/graph-format.md, "Checkpoints while it trains"):
// checkpoint_every, checkpoint_every_steps and keep_checkpoints, the interrupt checkpoint a Stop
// writes, and a run resumed from one ending with the weights of the run that was never
// interrupted, bit for bit on the CPU.
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "testkit/home.hpp"
#include "unit/runtime/run_helpers.hpp"
#include "unit/runtime/saved_weights.hpp"

namespace fs = std::filesystem;
using cdui::test::run_graph;
using cdui::test::require_succeeded;
using nlohmann::json;

namespace {

/// Moons through an MLP with dropout, shuffled, Adam, windows of 2 batches: 8 batches (4 steps)
/// an epoch for 3 epochs, a progress event each batch; the trained model saved as model.pt.
json graph(const json& loop_params = json::object()) {
  json loop{{"epochs", 3}, {"accumulate_steps", 2}, {"progress_interval_ms", 0}};
  loop.update(loop_params);
  auto g = cdui::test::dropout_moons_graph(loop);
  g["nodes"].push_back({{"id", "save"}, {"type", "ModelSaver"}, {"params", {{"path", "model.pt"}}}});
  g["edges"].push_back({{"from", "loop.model"}, {"to", "save.model"}});
  return g;
}

/// The loop's checkpoint files in a run folder, by name.
std::vector<std::string> checkpoint_files(const fs::path& run_dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator{run_dir / "checkpoints"})
    if (e.path().filename().string().rfind("loop-step", 0) == 0)
      names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// The same weights, bit for bit.
void check_same_weights(const fs::path& a, const fs::path& b) {
  auto x = cdui::test::load_weights(a);
  auto y = cdui::test::load_weights(b);
  BOOST_REQUIRE(x.size() == y.size());
  for (const auto& [name, t] : x)
    BOOST_TEST(torch::equal(t, y.at(name)), name << ": max difference " << (t - y.at(name)).abs().max().item<double>());
}

} // namespace

BOOST_AUTO_TEST_SUITE(loop_checkpoint_test)

BOOST_AUTO_TEST_CASE(a_stopped_run_resumed_from_its_folder_ends_with_the_uninterrupted_runs_weights) {
  cdui::test::temp_home home;
  auto whole = run_graph(graph(), home.path() / "whole");
  require_succeeded(whole);

  // Stopped at the 11th batch (epoch 2, inside its 2nd window): the window is dropped, and the
  // interrupt checkpoint is of the last step, the 5th.
  auto stopped = run_graph(graph(), home.path() / "stopped", cdui::test::stop_at_batch(11));
  BOOST_TEST_REQUIRE((stopped.outcome.status == cdui::run_status::cancelled));
  auto written = stopped.of_type("checkpoint");
  BOOST_REQUIRE_EQUAL(written.size(), 1u);
  BOOST_TEST(written[0]["kind"] == "interrupt");
  BOOST_TEST(written[0]["step"] == 5);
  BOOST_TEST(written[0]["epoch"] == 2);
  BOOST_TEST(checkpoint_files(home.path() / "stopped") == std::vector<std::string>{"loop-step5-interrupt.pt"});

  cdui::test::run_options from_folder;
  from_folder.resume_from = home.path() / "stopped";
  auto resumed = run_graph(graph(), home.path() / "resumed", from_folder);
  require_succeeded(resumed);
  check_same_weights(home.path() / "whole" / "checkpoints" / "model.pt",
                     home.path() / "resumed" / "checkpoints" / "model.pt");
  const auto& a = whole.metrics["loop"];
  const auto& b = resumed.metrics["loop"];
  BOOST_TEST(b["total_steps"] == a["total_steps"]);
  BOOST_TEST(b["total_batches"] == a["total_batches"]);
  BOOST_TEST(b["total_epochs_run"] == a["total_epochs_run"]);
  BOOST_TEST(b["final_train_loss"] == a["final_train_loss"]);
  // It trained only what was left: epoch 2 from its 3rd batch on, and epoch 3.
  BOOST_TEST(resumed.of_type("progress").size() == 14u);
  BOOST_TEST(resumed.of_type("progress").front()["epoch"] == 2);
  BOOST_TEST(resumed.of_type("progress").front()["batch"] == 3);
}

BOOST_AUTO_TEST_CASE(periodic_checkpoints_keep_the_newest_and_any_of_them_resumes_exactly) {
  cdui::test::temp_home home;
  auto run = run_graph(graph({{"checkpoint_every_steps", 3}, {"checkpoint_every", 1}, {"keep_checkpoints", 3}}),
                       home.path() / "run");
  require_succeeded(run);
  // Steps 3, 6, 9, 12 and the epochs' ends (steps 4, 8, 12): the newest 3 stay.
  std::vector<std::int64_t> steps;
  for (const auto& c : run.of_type("checkpoint")) {
    BOOST_TEST(c["kind"] == "periodic");
    steps.push_back(c["step"].get<std::int64_t>());
  }
  BOOST_TEST(steps == (std::vector<std::int64_t>{3, 4, 6, 8, 9, 12, 12}));
  BOOST_TEST(checkpoint_files(home.path() / "run")
             == (std::vector<std::string>{"loop-step12.pt", "loop-step8.pt", "loop-step9.pt"}));

  // From step 8 (the end of epoch 2, a checkpoint_every one) and from step 9 (inside epoch 3).
  for (const auto* file : {"loop-step8.pt", "loop-step9.pt"}) {
    cdui::test::run_options from_file;
    from_file.resume_from = home.path() / "run" / "checkpoints" / file;
    auto dir = home.path() / (std::string{"from-"} + file);
    auto resumed = run_graph(graph(), dir, from_file);
    require_succeeded(resumed);
    check_same_weights(home.path() / "run" / "checkpoints" / "model.pt", dir / "checkpoints" / "model.pt");
    BOOST_TEST(resumed.metrics["loop"]["total_steps"] == 12);
  }
}

BOOST_AUTO_TEST_CASE(a_checkpoint_saver_file_does_not_resume_a_loop) {
  cdui::test::temp_home home;
  auto doc = graph({{"epochs", 1}});
  doc["nodes"].push_back({{"id", "ckpt"}, {"type", "CheckpointSaver"}, {"params", {{"path", "saved.pt"}}}});
  doc["edges"].push_back({{"from", "loop.model"}, {"to", "ckpt.model"}});
  require_succeeded(run_graph(doc, home.path() / "first"));
  cdui::test::run_options from_file;
  from_file.resume_from = home.path() / "first" / "checkpoints" / "saved.pt";
  auto run = run_graph(graph(), home.path() / "second", from_file);
  BOOST_TEST_REQUIRE((run.outcome.status == cdui::run_status::failed));
  BOOST_TEST(run.outcome.error.find("saved.pt") != std::string::npos, run.outcome.error);
  BOOST_TEST(run.outcome.error.find("is not a checkpoint a TrainingLoop wrote") != std::string::npos,
             run.outcome.error);
}

BOOST_AUTO_TEST_CASE(a_folder_without_a_checkpoint_of_the_loop_trains_from_the_start_and_says_so) {
  cdui::test::temp_home home;
  fs::create_directories(home.path() / "empty" / "checkpoints");
  cdui::test::run_options from_folder;
  from_folder.resume_from = home.path() / "empty";
  auto run = run_graph(graph({{"epochs", 1}}), home.path() / "run", from_folder);
  require_succeeded(run);
  auto warnings = run.of_type("run_warning");
  BOOST_REQUIRE_EQUAL(warnings.size(), 1u);
  BOOST_TEST(warnings[0]["kind"] == "resume_not_found");
  BOOST_TEST(run.metrics["loop"]["total_steps"] == 4);
}

BOOST_AUTO_TEST_SUITE_END()
