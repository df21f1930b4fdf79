#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "unit/runtime/run_helpers.hpp"
#include "unit/runtime/saved_weights.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"

using cdui::run_status;
using cdui::test::add_edge;
using cdui::test::add_node;
using cdui::test::load_checkpoint_model;
using cdui::test::load_weights;
using cdui::test::params;
using cdui::test::recorded_run;
using cdui::test::require_succeeded;
using cdui::test::run_graph;
using cdui::test::same_weights;
using cdui::test::with_data_roots;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// Moons with adam, in order (no shuffle, no dropout), so a resumed run can retrace a straight one.
json base_graph(int epochs) {
  json doc = cdui::test::moons_graph();
  params(doc, "loader")["shuffle"] = false;
  params(doc, "loop")["epochs"] = epochs;
  params(doc, "opt") = {{"name", "adam"}, {"lr", 0.01}};
  return doc;
}

/// Trains `epochs` epochs, then saves a checkpoint and the model (checkpoints/ckpt.pt, trained.pt).
json train_and_checkpoint(int epochs) {
  json doc = base_graph(epochs);
  add_node(doc, "ckpt", "CheckpointSaver", {{"path", "ckpt.pt"}});
  add_node(doc, "save", "ModelSaver", {{"path", "trained.pt"}});
  add_edge(doc, "loop.model", "ckpt.model");
  add_edge(doc, "loop.optimizer_state", "ckpt.optimizer_state");
  add_edge(doc, "loop.model", "save.model");
  return doc;
}

/// A fresh Model loaded from `checkpoint`, saved as loaded.pt before it trains `epochs` more epochs
/// and is saved as resumed.pt.
json resume_from(const std::filesystem::path& checkpoint, int epochs) {
  json doc = base_graph(epochs);
  // The loaded model is saved before the loop trains it in place: "loaded" is listed first.
  json nodes = json::array();
  for (auto& n : doc["nodes"]) {
    if (n["id"] == "loop")
      nodes.push_back({{"id", "resume"}, {"type", "CheckpointLoader"},
                       {"params", {{"path", checkpoint.string()}}}});
    if (n["id"] == "loop")
      nodes.push_back({{"id", "loaded"}, {"type", "ModelSaver"}, {"params", {{"path", "loaded.pt"}}}});
    nodes.push_back(n);
  }
  doc["nodes"] = nodes;
  add_node(doc, "save", "ModelSaver", {{"path", "resumed.pt"}});
  for (auto& e : doc["edges"])
    if (e["to"] == "loop.model")
      e["from"] = "resume.model";
  add_edge(doc, "model.model", "resume.model");
  add_edge(doc, "resume.model", "loaded.model");
  add_edge(doc, "resume.optimizer_state", "loop.optimizer_state");
  add_edge(doc, "loop.model", "save.model");
  return doc;
}

/// A graph that only loads `checkpoint` into a fresh Model: ids model, resume.
json load_only(const std::filesystem::path& checkpoint, const json& layers) {
  json doc = {{"nodes", json::array()}, {"edges", json::array()}};
  add_node(doc, "model", "Model", {{"input_shape", {2}}, {"layers", layers}});
  add_node(doc, "resume", "CheckpointLoader", {{"path", checkpoint.string()}});
  add_edge(doc, "model.model", "resume.model");
  return doc;
}

/// A short moons run (testkit/graphs.hpp) whose trained model goes to a `type` saver "save" at `path`.
json saved_to(const std::string& type, const std::string& path) {
  json doc = cdui::test::moons_graph_json(1, 2);
  add_node(doc, "save", type, {{"path", path}});
  add_edge(doc, "loop.model", "save.model");
  return doc;
}

/// A home laid out as the server lays it out, with a store and a token, and the folder of run r1.
struct home_with_a_run {
  cdui::test::temp_home tmp;
  fs::path home = tmp.path();
  fs::path run_dir = home / "runs" / "r1";

  home_with_a_run() {
    fs::create_directories(run_dir / "checkpoints");
    std::ofstream{home / "cdui.db"} << "the store";
    std::ofstream{home / "session.token"} << "secret\n";
  }
  [[nodiscard]] std::string read(const std::string& name) const {
    std::ifstream in{home / name};
    return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  }
};

json moons_layers() { return cdui::test::moons_graph()["nodes"][4]["params"]["layers"]; }

void expect_load_failure(const recorded_run& run, const std::filesystem::path& path,
                         const std::string& why) {
  BOOST_TEST_REQUIRE((run.outcome.status == run_status::failed));
  const auto& error = run.outcome.error;
  BOOST_TEST(error.rfind("Node CheckpointLoader (resume) failed: ", 0) == 0u, error);
  BOOST_TEST(error.find(path.string()) != std::string::npos, error);
  BOOST_TEST(error.find(why) != std::string::npos, error);
  BOOST_TEST(run.of_type("execution_error").size() == 1u);
}

} // namespace

BOOST_AUTO_TEST_SUITE(checkpoint_test)

BOOST_AUTO_TEST_CASE(a_checkpoint_holds_the_trained_model_and_its_epoch) {
  cdui::test::temp_home home;
  auto run = run_graph(train_and_checkpoint(2), home.path());
  require_succeeded(run);
  auto ckpt = home.path() / "checkpoints" / "ckpt.pt";
  BOOST_TEST(run.metrics["ckpt"]["path"] == ckpt.string());
  BOOST_TEST(run.metrics["ckpt"]["epoch"] == 2);
  BOOST_TEST(same_weights(load_checkpoint_model(ckpt), load_weights(home.path() / "checkpoints" / "trained.pt")));
  // No temp file is left beside it.
  std::vector<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(home.path() / "checkpoints"))
    files.push_back(f.path().filename().string());
  std::sort(files.begin(), files.end());
  BOOST_TEST(files == std::vector<std::string>({"ckpt.pt", "trained.pt"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_resumed_run_loads_the_model_and_continues_the_epochs) {
  cdui::test::temp_home first, second;
  auto saved = run_graph(train_and_checkpoint(2), first.path());
  require_succeeded(saved);
  auto ckpt = first.path() / "checkpoints" / "ckpt.pt";

  auto resumed = run_graph(resume_from(ckpt, 1), second.path());
  require_succeeded(resumed);
  // The fresh model now holds the checkpoint's weights.
  BOOST_TEST(same_weights(load_weights(second.path() / "checkpoints" / "loaded.pt"),
                          load_weights(first.path() / "checkpoints" / "trained.pt")));
  BOOST_TEST(resumed.metrics["resume"]["epoch"] == 2);
  BOOST_TEST(resumed.metrics["resume"]["path"] == ckpt.string());
  BOOST_TEST(resumed.config("loop")["start_epoch"] == 3);
  BOOST_TEST(resumed.steps("loop", "train_loss") == std::vector<std::int64_t>({3}));
  for (const auto& p : resumed.of_type("progress")) {
    BOOST_TEST(p["epoch"] == 3);
    BOOST_TEST(p["epochs"] == 3);
  }
  // The loaded model starts where the first run ended: the loss of its first epoch is below the
  // first run's first epoch.
  BOOST_TEST(resumed.series("loop", "train_loss")[0] < saved.series("loop", "train_loss")[0]);
}

BOOST_AUTO_TEST_CASE(resuming_retraces_an_uninterrupted_run) {
  // 2 epochs + checkpoint + 2 epochs gives the weights of 4 epochs straight, when the optimizer's
  // state (adam's moments and step count) is restored too.
  cdui::test::temp_home straight, first, second;
  auto whole = run_graph(train_and_checkpoint(4), straight.path());
  require_succeeded(whole);
  require_succeeded(run_graph(train_and_checkpoint(2), first.path()));
  auto resumed = run_graph(resume_from(first.path() / "checkpoints" / "ckpt.pt", 2), second.path());
  require_succeeded(resumed);

  auto straight_loss = whole.series("loop", "train_loss");
  auto resumed_loss = resumed.series("loop", "train_loss");
  BOOST_REQUIRE_EQUAL(straight_loss.size(), 4u);
  BOOST_REQUIRE_EQUAL(resumed_loss.size(), 2u);
  BOOST_TEST(resumed_loss[0] == straight_loss[2]);
  BOOST_TEST(resumed_loss[1] == straight_loss[3]);
  BOOST_TEST(same_weights(load_weights(second.path() / "checkpoints" / "resumed.pt"),
                          load_weights(straight.path() / "checkpoints" / "trained.pt")));
  BOOST_TEST(resumed.metrics["eval"]["accuracy"] == whole.metrics["eval"]["accuracy"]);
  BOOST_TEST(resumed.metrics["eval"]["loss"] == whole.metrics["eval"]["loss"]);
}

BOOST_AUTO_TEST_CASE(a_missing_checkpoint_fails_naming_the_path) {
  cdui::test::temp_home home;
  auto path = home.path() / "no-such-checkpoint.pt";
  expect_load_failure(run_graph(load_only(path, moons_layers()), home.path()), path, "no checkpoint");
}

BOOST_AUTO_TEST_CASE(a_relative_checkpoint_path_is_looked_up_in_the_run_folder) {
  cdui::test::temp_home home;
  auto run = run_graph(load_only("ckpt.pt", moons_layers()), home.path());
  expect_load_failure(run, home.path() / "checkpoints" / "ckpt.pt", "no checkpoint");
}

BOOST_AUTO_TEST_CASE(a_corrupt_checkpoint_fails_naming_the_path) {
  cdui::test::temp_home home;
  auto path = home.path() / "corrupt.pt";
  {
    std::ofstream out{path, std::ios::binary};
    out << "this is not a torch archive";
  }
  expect_load_failure(run_graph(load_only(path, moons_layers()), home.path()), path, "cannot load");

  // An empty file, as a crash while writing could leave.
  { std::ofstream truncate{path, std::ios::binary | std::ios::trunc}; }
  expect_load_failure(run_graph(load_only(path, moons_layers()), home.path()), path, "cannot load");
}

BOOST_AUTO_TEST_CASE(a_truncated_checkpoint_fails_naming_the_path) {
  cdui::test::temp_home home;
  require_succeeded(run_graph(train_and_checkpoint(1), home.path()));
  auto good = home.path() / "checkpoints" / "ckpt.pt";
  auto path = home.path() / "truncated.pt";
  auto size = std::filesystem::file_size(good);
  std::filesystem::copy_file(good, path);
  std::filesystem::resize_file(path, size / 2);
  expect_load_failure(run_graph(load_only(path, moons_layers()), home.path()), path, "cannot load");
}

BOOST_AUTO_TEST_CASE(a_model_file_is_not_a_checkpoint) {
  cdui::test::temp_home home;
  require_succeeded(run_graph(train_and_checkpoint(1), home.path()));
  auto path = home.path() / "checkpoints" / "trained.pt";  // ModelSaver's, not CheckpointSaver's
  expect_load_failure(run_graph(load_only(path, moons_layers()), home.path()), path,
                      "not a CheckpointSaver checkpoint");
}

// Guards a fixed bug (runtime/nodes/checkpoints.cpp, run_checkpoint_loader): torch's InputArchive::read does
// tensor.set_(saved), which adopts the saved shape, so a 2-32-2 checkpoint "loads" into a 2-64-2
// Model without an error: the model silently becomes 2-32-2 while the Model node reported 322
// parameters. With a different out_features the run fails later with "Target 2 is out of bounds."
BOOST_AUTO_TEST_CASE(a_checkpoint_of_another_architecture_is_refused) {
  cdui::test::temp_home home;
  require_succeeded(run_graph(train_and_checkpoint(1), home.path()));
  auto path = home.path() / "checkpoints" / "ckpt.pt";
  auto wider = R"([{"type": "Linear", "out_features": 64}, {"type": "ReLU"},
                   {"type": "Linear", "out_features": 2}])"_json;
  expect_load_failure(run_graph(load_only(path, wider), home.path()), path, "into this model");
}

// Guards a fixed bug (runtime/nodes/training_loop.cpp, load_optimizer): resuming an adam checkpoint with an sgd
// Optimizer fails with libtorch's "is_tensor_type INTERNAL ASSERT FAILED at .../sgd.cpp:37, please
// report a bug to PyTorch", which tells the user nothing about the checkpoint or the optimizer.
BOOST_AUTO_TEST_CASE(resuming_with_another_optimizer_says_so) {
  cdui::test::temp_home home;
  require_succeeded(run_graph(train_and_checkpoint(1), home.path()));
  auto doc = resume_from(home.path() / "checkpoints" / "ckpt.pt", 1);
  params(doc, "opt") = {{"name", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}};
  auto run = run_graph(doc, home.path());
  BOOST_TEST_REQUIRE((run.outcome.status == run_status::failed));
  const auto& error = run.outcome.error;
  BOOST_TEST(error.find("optimizer") != std::string::npos, error);
  BOOST_TEST(error.find("INTERNAL ASSERT") == std::string::npos, error);
}

// Issue 10: a saver's path of ../../../cdui.db replaced the run store with a checkpoint.
BOOST_AUTO_TEST_CASE(a_saver_path_that_climbs_out_of_checkpoints_is_refused_before_the_run) {
  for (const auto* type : {"ModelSaver", "CheckpointSaver"}) {
    auto result = cdui::runtime::validate_graph(saved_to(type, "../../../cdui.db"));
    BOOST_TEST_REQUIRE(std::holds_alternative<std::vector<cdui::runtime::graph_error>>(result));
    auto errors = std::get<std::vector<cdui::runtime::graph_error>>(result);
    BOOST_TEST_REQUIRE(errors.size() == 1u);
    BOOST_TEST(errors[0].node == "save");
    BOOST_TEST(errors[0].field == "path");
    BOOST_TEST(errors[0].message.find(std::string{"node 'save' ("} + type + "): param 'path' "
                                      "'../../../cdui.db' leaves the run's checkpoints/ folder")
                 == 0u, errors[0].message);
  }
  auto loader = cdui::runtime::validate_graph(load_only("../other/ck.pt", moons_layers()));
  BOOST_TEST(std::holds_alternative<std::vector<cdui::runtime::graph_error>>(loader));
}

BOOST_AUTO_TEST_CASE(a_saver_never_writes_the_home_s_files_and_the_run_fails_saying_why) {
  home_with_a_run h;
  for (const auto* type : {"ModelSaver", "CheckpointSaver"})
    for (const auto* name : {"cdui.db", "session.token"}) {
      auto target = (h.home / name).string();
      cdui::test::scoped_env roots{"CODEFYUI_OUTPUT_ROOTS", h.home.parent_path().string()};
      auto run = run_graph(saved_to(type, target), h.run_dir);
      BOOST_TEST_REQUIRE((run.outcome.status == run_status::failed));
      BOOST_TEST(run.outcome.error.rfind(std::string{"Node "} + type + " (save) failed: param 'path' '"
                                           + target + "' is inside cdui's home", 0) == 0u,
                 run.outcome.error);
    }
  // Through a link in checkpoints/ that leads to the home.
  fs::create_directory_symlink(h.home, h.run_dir / "checkpoints" / "up");
  auto run = run_graph(saved_to("ModelSaver", "up/cdui.db"), h.run_dir);
  BOOST_TEST_REQUIRE((run.outcome.status == run_status::failed));
  BOOST_TEST(run.outcome.error.find("inside cdui's home") != std::string::npos, run.outcome.error);
  BOOST_TEST(h.read("cdui.db") == "the store");
  BOOST_TEST(h.read("session.token") == "secret\n");
  // Nothing was left beside them either (no temporary file).
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator{h.home})
    files += entry.is_regular_file() ? 1 : 0;
  BOOST_TEST(files == 2u);
}

BOOST_AUTO_TEST_CASE(an_absolute_saver_path_needs_an_output_root) {
  home_with_a_run h;
  cdui::test::temp_home exports;
  auto target = (exports.path() / "models" / "m.pt").string();
  auto refused = run_graph(saved_to("ModelSaver", target), h.run_dir);
  BOOST_TEST_REQUIRE((refused.outcome.status == run_status::failed));
  BOOST_TEST(refused.outcome.error.find("CODEFYUI_OUTPUT_ROOTS") != std::string::npos,
             refused.outcome.error);
  BOOST_TEST(!fs::exists(target));

  cdui::test::scoped_env roots{"CODEFYUI_OUTPUT_ROOTS", "/nowhere:" + exports.path().string()};
  auto written = run_graph(saved_to("ModelSaver", target), h.run_dir);
  require_succeeded(written);
  BOOST_TEST(written.metrics["save"]["path"] == target);
  BOOST_TEST(!load_weights(target).empty());
}

BOOST_AUTO_TEST_CASE(a_loader_reads_another_run_s_checkpoint_but_not_the_home_s_files) {
  home_with_a_run h;
  auto earlier = h.home / "runs" / "r0";
  require_succeeded(run_graph(train_and_checkpoint(1), earlier, with_data_roots("")));
  auto ckpt = earlier / "checkpoints" / "ckpt.pt";
  // No data root at all: another run's checkpoints/ folder is readable in its home.
  auto loaded = run_graph(load_only(ckpt, moons_layers()), h.run_dir, with_data_roots(""));
  require_succeeded(loaded);
  BOOST_TEST(loaded.metrics["resume"]["path"] == ckpt.string());

  auto token = h.home / "session.token";
  expect_load_failure(
    run_graph(load_only(token, moons_layers()), h.run_dir, with_data_roots(h.home.string())), token,
    "inside cdui's home");
  auto graph = earlier / "graph.json";
  std::ofstream{graph} << "{}";
  expect_load_failure(
    run_graph(load_only(graph, moons_layers()), h.run_dir, with_data_roots(h.home.string())), graph,
    "inside cdui's home");
}

BOOST_AUTO_TEST_SUITE_END()
