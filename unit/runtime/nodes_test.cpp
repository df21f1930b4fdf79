#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include "messages/text.hpp"
#include "unit/runtime/run_helpers.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"

using cdui::run_status;
using cdui::test::add_edge;
using cdui::test::add_node;
using cdui::test::moons_graph;
using cdui::test::params;
using cdui::test::recorded_run;
using cdui::test::require_succeeded;
using cdui::test::run_graph;
using nlohmann::json;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A graph of one Model node with a fixed input shape and no dataset.
json model_only(const json& input_shape, const json& layers) {
  json doc = {{"nodes", json::array()}, {"edges", json::array()}};
  add_node(doc, "model", "Model", {{"input_shape", input_shape}, {"layers", layers}});
  return doc;
}

/// A graph that loads a dataset and describes it with a Model node: ids data, model.
json dataset_and_model(const json& dataset_params, const json& layers) {
  json doc = {{"nodes", json::array()}, {"edges", json::array()}};
  add_node(doc, "data", "Dataset", dataset_params);
  add_node(doc, "model", "Model", {{"layers", layers}});
  add_edge(doc, "data.dataset", "model.dataset");
  return doc;
}

/// A regression graph: 256 samples of 4 features, a linear model, mse, adam.
json regression_graph() {
  json doc = moons_graph();
  params(doc, "data") = {{"name", "regression"}, {"n_samples", 256}, {"n_features", 4},
                         {"noise", 0.01}};
  params(doc, "test_data") = {{"name", "regression"}, {"split", "test"}, {"n_samples", 128},
                              {"n_features", 4}, {"noise", 0.01}};
  params(doc, "model")["layers"] = R"([{"type": "Linear", "out_features": 1}])"_json;
  params(doc, "loss")["kind"] = "mse";
  params(doc, "opt") = {{"name", "adam"}, {"lr", 0.05}};
  params(doc, "loop")["epochs"] = 5;
  return doc;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out{path};
  out << text;
}

/// The run failed at node `id` of type `type`, with an error that contains every one of `words`.
void expect_node_failure(const recorded_run& run, const std::string& type, const std::string& id,
                         std::vector<std::string> words) {
  BOOST_TEST_REQUIRE((run.outcome.status == run_status::failed), "status is not failed");
  auto prefix = "Node " + type + " (" + id + ") failed: ";
  BOOST_TEST(run.outcome.error.rfind(prefix, 0) == 0u, run.outcome.error);
  for (const auto& w : words)
    BOOST_TEST(contains(run.outcome.error, w), "[" << w << "] not in: " << run.outcome.error);
  auto errors = run.of_type("execution_error");
  BOOST_TEST_REQUIRE(errors.size() == 1u);
  BOOST_TEST(errors[0]["node"] == id);
  BOOST_TEST(errors[0]["error"] == run.outcome.error);
  BOOST_TEST(run.of_type("execution_complete").empty());
  BOOST_TEST(run.of_type("execution_stopped").empty());
}

/// The train loss of the first epoch and the final one.
std::pair<double, double> first_and_final_train_loss(const recorded_run& run) {
  auto series = run.series("loop", "train_loss");
  BOOST_TEST_REQUIRE(!series.empty());
  return {series.front(), run.metrics["loop"]["final_train_loss"].get<double>()};
}

/// Trains on train.csv (three separable classes, labels `a`, `b`, `c`) and evaluates on test.csv, a
/// copy of its `b` and `c` rows: a model right on every training row is right on every test row.
recorded_run train_on_three_evaluate_on_two(const cdui::test::temp_home& home, const std::string& a,
                                            const std::string& b, const std::string& c,
                                            const json& classes = json::array()) {
  std::string train_rows = "x,y,label\n";
  for (int i = 0; i < 4; ++i)
    train_rows += "-5,0," + a + "\n0,5," + b + "\n5,0," + c + "\n";
  write_file(home.path() / "train.csv", train_rows);
  write_file(home.path() / "test.csv",
             "x,y,label\n0,5," + b + "\n5,0," + c + "\n0,5," + b + "\n5,0," + c + "\n");
  json doc = moons_graph();
  params(doc, "data") = {
    {"name", "csv"}, {"path", (home.path() / "train.csv").string()}, {"classes", classes}};
  params(doc, "test_data") = {
    {"name", "csv"}, {"path", (home.path() / "test.csv").string()}, {"classes", classes}};
  params(doc, "model")["layers"][2]["out_features"] = 3;
  params(doc, "loader")["batch_size"] = 12;
  params(doc, "opt")["lr"] = 0.05;
  params(doc, "loop")["epochs"] = 60;
  add_node(doc, "train_eval", "EvaluateModel");
  add_edge(doc, "loop.model", "train_eval.model");
  add_edge(doc, "loader.dataloader", "train_eval.dataloader");
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  BOOST_TEST_REQUIRE(run.metrics["train_eval"]["accuracy"].get<double>() == 1.0);
  return run;
}

/// Options of a run on `device`, on a machine of `cards` sim cards of 1 GiB.
cdui::test::run_options on_sim_card(const std::string& device, int cards) {
  cdui::test::run_options options;
  options.device = device;
  options.host.sim_count = cards;
  options.host.sim_total_bytes.assign(static_cast<std::size_t>(cards), std::int64_t{1} << 30);
  return options;
}

} // namespace

BOOST_AUTO_TEST_SUITE(nodes_test)

// Dataset

BOOST_AUTO_TEST_CASE(fashion_mnist_gives_28_by_28_images_of_10_classes) {
  cdui::test::temp_home home;
  json doc = dataset_and_model({{"name", "fashion_mnist"}, {"limit", 512}},
                               R"([{"type": "Flatten"}, {"type": "Linear", "out_features": 10}])"_json);
  add_node(doc, "loader", "DataLoader", {{"batch_size", 128}});
  add_node(doc, "loss", "Loss");
  add_node(doc, "opt", "Optimizer");
  add_node(doc, "loop", "TrainingLoop", {{"max_steps", 1}});
  add_edge(doc, "data.dataset", "loader.dataset");
  add_edge(doc, "model.model", "loop.model");
  add_edge(doc, "loader.dataloader", "loop.dataloader");
  add_edge(doc, "loss.loss_fn", "loop.loss_fn");
  add_edge(doc, "opt.optimizer", "loop.optimizer");
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  BOOST_TEST(run.metrics["data"]["samples"] == 512);
  auto config = run.config("model");
  BOOST_TEST(config["input_shape"] == json({1, 28, 28}));
  BOOST_TEST(config["output_shape"] == json({10}));
  BOOST_TEST(run.metrics["model"]["parameters"] == 28 * 28 * 10 + 10);
  BOOST_TEST(run.metrics["loader"]["batches"] == 4);

  // Ten classes: a model with seven outputs is refused by the loop, which says so.
  params(doc, "model")["layers"][1]["out_features"] = 7;
  params(doc, "data")["split"] = "test";
  params(doc, "data")["limit"] = 64;
  auto wrong = run_graph(doc, home.path());
  expect_node_failure(wrong, "TrainingLoop", "loop", {"7 outputs", "10 classes", "out_features to 10"});
}

BOOST_AUTO_TEST_CASE(fashion_mnist_from_a_missing_folder_says_where_it_looked) {
  cdui::test::temp_home home;
  json doc = dataset_and_model({{"name", "fashion_mnist"}, {"root", (home.path() / "nowhere").string()}},
                               R"([{"type": "Flatten"}])"_json);
  auto run = run_graph(doc, home.path());
  expect_node_failure(run, "Dataset", "data",
                      {(home.path() / "nowhere" / "train-images-idx3-ubyte.gz").string()});
}

BOOST_AUTO_TEST_CASE(damaged_idx_files_fail_their_node_with_what_is_wrong) {
  // The three inputs idx_fuzz found crashing read_idx (docs/fuzzing.md), and shapes that disagree.
  cdui::test::temp_home home;
  auto root = home.path() / "idx";
  std::filesystem::create_directories(root);
  auto idx = [](std::vector<std::uint32_t> dims, std::size_t payload) {
    std::string bytes{'\0', '\0', '\x08', static_cast<char>(dims.size())};
    for (auto d : dims)
      for (int shift : {24, 16, 8, 0})
        bytes += static_cast<char>((d >> shift) & 0xFF);
    return bytes + std::string(payload, '\x01');
  };
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream{root / (std::string{"train-"} + name + "-ubyte.gz"), std::ios::binary} << bytes;
  };
  struct damage {
    std::string images;
    std::string labels;
    int limit;
    std::string says;
  };
  std::string labels_of_2 = idx({2}, 2);
  for (const auto& c : std::vector<damage>{
         {idx({2, 2, 2}, 8).substr(0, 10), labels_of_2, 0, "the file ends within them"},
         {idx({}, 0), labels_of_2, 5, "has no dimensions"},
         {idx({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, 16), labels_of_2, 0,
          "its dimensions say more bytes than the file's"},
         {idx({0, 0xFFFFFFFF, 0xFFFFFFFF}, 0), labels_of_2, 0, "has no samples: its dimension 1 is 0"},
         {idx({2, 2, 2}, 8), idx({3}, 3), 0, "they must be N x height x width and N"}}) {
    write("images-idx3", c.images);
    write("labels-idx1", c.labels);
    json doc = dataset_and_model({{"name", "fashion_mnist"}, {"root", root.string()}, {"limit", c.limit}},
                                 R"([{"type": "Flatten"}])"_json);
    expect_node_failure(run_graph(doc, home.path()), "Dataset", "data", {c.says});
  }
}

BOOST_AUTO_TEST_CASE(generated_datasets_have_the_asked_sizes_and_shapes) {
  cdui::test::temp_home home;
  struct expected {
    json params;
    std::int64_t samples;
    json shape;
  };
  std::vector<expected> cases{
    {{{"name", "moons"}, {"n_samples", 101}}, 101, {2}},
    {{{"name", "circles"}, {"n_samples", 64}, {"factor", 0.3}}, 64, {2}},
    {{{"name", "blobs"}, {"n_samples", 90}, {"n_features", 5}, {"n_classes", 4}}, 90, {5}},
    {{{"name", "regression"}, {"n_samples", 33}, {"n_features", 3}}, 33, {3}},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.params.dump()) {
      auto run = run_graph(dataset_and_model(c.params, R"([{"type": "Linear", "out_features": 1}])"_json),
                           home.path());
      require_succeeded(run);
      BOOST_TEST(run.metrics["data"]["samples"] == c.samples);
      BOOST_TEST(run.config("model")["input_shape"] == c.shape);
    }
  }
}

BOOST_AUTO_TEST_CASE(blobs_have_as_many_classes_as_asked) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "data") = {{"name", "blobs"}, {"n_samples", 200}, {"n_classes", 4}, {"n_features", 3}};
  params(doc, "test_data") = {{"name", "blobs"}, {"split", "test"}, {"n_samples", 100},
                              {"n_classes", 4}, {"n_features", 3}};
  params(doc, "model")["layers"][2]["out_features"] = 4;
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  BOOST_TEST(run.metrics["eval"]["samples"] == 100);

  params(doc, "model")["layers"][2]["out_features"] = 3;
  auto wrong = run_graph(doc, home.path());
  expect_node_failure(wrong, "TrainingLoop", "loop", {"4 classes"});
}

BOOST_AUTO_TEST_CASE(a_csv_file_is_read_with_its_classes) {
  cdui::test::temp_home home;
  auto path = home.path() / "flowers.csv";
  write_file(path, "length,width,kind\n"
                   "1.0,0.5,rose\n"
                   "1.2,0.4,rose\n"
                   "\n"
                   "3.0,2.5,tulip\n"
                   "3.1,2.4,tulip\n"
                   "5.0,0.1,daisy\n"
                   "5.2,0.2,daisy\n");
  json doc = moons_graph();
  params(doc, "data") = {{"name", "csv"}, {"path", path.string()}};
  params(doc, "test_data") = {{"name", "csv"}, {"path", path.string()}};
  params(doc, "loader")["batch_size"] = 4;
  params(doc, "model")["layers"][2]["out_features"] = 3;
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  BOOST_TEST(run.metrics["data"]["samples"] == 6);
  BOOST_TEST(run.config("model")["input_shape"] == json({2}));
  BOOST_TEST(run.metrics["eval"]["samples"] == 6);

  // Three distinct labels: two outputs are not enough.
  params(doc, "model")["layers"][2]["out_features"] = 2;
  expect_node_failure(run_graph(doc, home.path()), "TrainingLoop", "loop", {"3 classes"});
}

BOOST_AUTO_TEST_CASE(a_csv_label_column_can_be_named) {
  cdui::test::temp_home home;
  auto path = home.path() / "values.csv";
  write_file(path, "y,a,b\n0.5,1,2\n1.5,3,4\n2.5,5,6\n");
  json doc = dataset_and_model({{"name", "csv"}, {"path", path.string()}, {"label_column", "y"},
                                {"task", "regression"}},
                               R"([{"type": "Linear", "out_features": 1}])"_json);
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  BOOST_TEST(run.metrics["data"]["samples"] == 3);
  BOOST_TEST(run.config("model")["input_shape"] == json({2}));

  params(doc, "data")["label_column"] = "z";
  expect_node_failure(run_graph(doc, home.path()), "Dataset", "data", {"label_column", "'z'"});
}

BOOST_AUTO_TEST_CASE(a_bad_csv_cell_is_named_by_line_and_column) {
  cdui::test::temp_home home;
  auto path = home.path() / "bad.csv";
  write_file(path, "a,b,label\n1,2,x\n3,oops,y\n");
  auto doc = dataset_and_model({{"name", "csv"}, {"path", path.string()}},
                               R"([{"type": "Linear", "out_features": 2}])"_json);
  expect_node_failure(run_graph(doc, home.path()), "Dataset", "data",
                      {path.string(), "line 3", "column 'b'", "'oops'", "not a number"});

  write_file(path, "a,b,label\n1,2,x\n3,4\n");
  expect_node_failure(run_graph(doc, home.path()), "Dataset", "data",
                      {"line 3", "2 columns", "header has 3"});

  write_file(path, "a,b,label\n");
  expect_node_failure(run_graph(doc, home.path()), "Dataset", "data", {"no rows"});

  params(doc, "data")["path"] = (home.path() / "absent.csv").string();
  expect_node_failure(run_graph(doc, home.path()), "Dataset", "data",
                      {"cannot open", (home.path() / "absent.csv").string()});
}

// std::stof reads a number's prefix and ignores the rest: "4x" must not pass as 4.
BOOST_AUTO_TEST_CASE(a_csv_cell_with_trailing_garbage_is_not_a_number) {
  cdui::test::temp_home home;
  auto path = home.path() / "typo.csv";
  write_file(path, "a,b,label\n1,2,x\n3,4x,y\n");
  auto doc = dataset_and_model({{"name", "csv"}, {"path", path.string()}},
                               R"([{"type": "Linear", "out_features": 2}])"_json);
  expect_node_failure(run_graph(doc, home.path()), "Dataset", "data", {"line 3", "'4x'"});
}

// Line numbers count blank lines too (a row index + 2 would say line 3 here).
BOOST_AUTO_TEST_CASE(a_bad_regression_label_is_named_by_its_real_line) {
  cdui::test::temp_home home;
  auto path = home.path() / "labels.csv";
  write_file(path, "a,y\n1,0.5\n\n2,high\n");  // "high" is on line 4
  auto doc = dataset_and_model({{"name", "csv"}, {"path", path.string()}, {"task", "regression"}},
                               R"([{"type": "Linear", "out_features": 1}])"_json);
  expect_node_failure(run_graph(doc, home.path()), "Dataset", "data", {"line 4", "'high'"});
}

BOOST_AUTO_TEST_CASE(csv_files_with_integer_labels_agree_on_class_ids) {
  cdui::test::temp_home home;
  auto run = train_on_three_evaluate_on_two(home, "0", "1", "2");
  BOOST_TEST(run.metrics["eval"]["accuracy"].get<double>() == 1.0);
}

// Text labels number alike in every file when the Dataset nodes declare their classes.
BOOST_AUTO_TEST_CASE(csv_files_with_text_labels_agree_on_class_ids) {
  cdui::test::temp_home home;
  auto run = train_on_three_evaluate_on_two(home, "cat", "dog", "fox", {"cat", "dog", "fox"});
  BOOST_TEST(run.metrics["eval"]["accuracy"].get<double>() == 1.0);
}

BOOST_AUTO_TEST_CASE(a_csv_label_outside_the_declared_classes_names_its_line) {
  cdui::test::temp_home home;
  write_file(home.path() / "train.csv", "x,y,label\n0,1,cat\n1,0,dog\n\n2,2,emu\n");
  json doc = moons_graph();
  params(doc, "data") = {{"name", "csv"},
                         {"path", (home.path() / "train.csv").string()},
                         {"classes", {"cat", "dog"}}};
  expect_node_failure(run_graph(doc, home.path()), "Dataset", "data",
                      {"line 5", "'emu'", "param 'classes'"});
}

// DataLoader

BOOST_AUTO_TEST_CASE(drop_last_decides_whether_the_short_batch_is_trained) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "data")["n_samples"] = 100;  // 32 + 32 + 32 + 4
  params(doc, "loop")["epochs"] = 2;
  auto keep = run_graph(doc, home.path());
  require_succeeded(keep);
  BOOST_TEST(keep.metrics["loader"]["batches"] == 4);
  BOOST_TEST(keep.metrics["loop"]["total_batches"] == 8);
  BOOST_TEST(keep.config("loop")["batches_per_epoch"] == 4);

  params(doc, "loader")["drop_last"] = true;
  auto drop = run_graph(doc, home.path());
  require_succeeded(drop);
  BOOST_TEST(drop.metrics["loader"]["batches"] == 3);
  BOOST_TEST(drop.metrics["loop"]["total_batches"] == 6);

  params(doc, "loader")["batch_size"] = 101;
  expect_node_failure(run_graph(doc, home.path()), "DataLoader", "loader",
                      {"'batch_size'", "101", "100 samples", "drop_last"});
}

// Model

BOOST_AUTO_TEST_CASE(a_model_reports_its_shapes_and_parameter_count) {
  cdui::test::temp_home home;
  auto run = run_graph(model_only({1, 8, 8}, R"([
      {"type": "Conv2d", "out_channels": 4, "kernel_size": 3},
      {"type": "BatchNorm2d"},
      {"type": "ReLU"},
      {"type": "MaxPool2d", "kernel_size": 2},
      {"type": "Flatten"},
      {"type": "Dropout", "p": 0.2},
      {"type": "Linear", "out_features": 10},
      {"type": "LayerNorm"},
      {"type": "GELU"},
      {"type": "BatchNorm1d"},
      {"type": "Tanh"},
      {"type": "Linear", "out_features": 3, "bias": false}
    ])"_json),
                       home.path());
  require_succeeded(run);
  auto config = run.config("model");
  BOOST_TEST(config["input_shape"] == json({1, 8, 8}));
  BOOST_TEST(config["output_shape"] == json({3}));
  // conv 4*1*3*3 + 4, batchnorm 4 + 4, linear 36*10 + 10, layernorm 10 + 10, batchnorm 10 + 10,
  // linear 10*3 without bias.
  std::int64_t expected = (36 + 4) + 8 + (360 + 10) + 20 + 20 + 30;
  BOOST_TEST(run.metrics["model"]["parameters"] == expected);
}

BOOST_AUTO_TEST_CASE(linear_on_images_without_flatten_names_the_layer) {
  cdui::test::temp_home home;
  auto run = run_graph(dataset_and_model({{"name", "fashion_mnist"}, {"split", "test"}, {"limit", 16}},
                                         R"([{"type": "Linear", "out_features": 10}])"_json),
                       home.path());
  expect_node_failure(run, "Model", "model", {"layer 1 (Linear)", "[N, 1, 28, 28]", "Flatten"});
}

BOOST_AUTO_TEST_CASE(conv2d_on_flat_features_names_the_layer) {
  cdui::test::temp_home home;
  auto run = run_graph(dataset_and_model({{"name", "moons"}, {"n_samples", 16}},
                                         R"([{"type": "Linear", "out_features": 4},
                                             {"type": "Conv2d", "out_channels": 2, "kernel_size": 3}])"_json),
                       home.path());
  expect_node_failure(run, "Model", "model", {"layer 2 (Conv2d)", "[N, 4]"});
}

BOOST_AUTO_TEST_CASE(a_kernel_larger_than_the_image_names_the_layer) {
  cdui::test::temp_home home;
  auto run = run_graph(model_only({1, 8, 8}, R"([
      {"type": "Conv2d", "out_channels": 2, "kernel_size": 3},
      {"type": "Conv2d", "out_channels": 2, "kernel_size": 9}
    ])"_json),
                       home.path());
  expect_node_failure(run, "Model", "model", {"layer 2 (Conv2d)", "[N, 2, 6, 6]"});
}

BOOST_AUTO_TEST_CASE(declared_sizes_that_disagree_with_the_data_are_named) {
  cdui::test::temp_home home;
  auto run = run_graph(model_only({5}, R"([{"type": "Linear", "in_features": 4, "out_features": 2}])"_json),
                       home.path());
  expect_node_failure(run, "Model", "model", {"layer 1 (Linear)", "in_features 4", "[N, 5]"});

  json doc = dataset_and_model({{"name", "moons"}, {"n_samples", 16}},
                               R"([{"type": "Linear", "out_features": 2}])"_json);
  params(doc, "model")["input_shape"] = {3};
  expect_node_failure(run_graph(doc, home.path()), "Model", "model", {"'input_shape'", "[N, 3]", "[N, 2]"});

  // With neither a dataset nor an input_shape the input shape is unknown: validation refuses it
  // (validate_test), where it used to fail as it ran.
  auto unknown = cdui::runtime::validate_graph(model_only(json::array(), R"([{"type": "ReLU"}])"_json));
  BOOST_TEST(std::holds_alternative<std::vector<cdui::runtime::graph_error>>(unknown));
}

// Loss

BOOST_AUTO_TEST_CASE(mse_on_regression_trains) {
  cdui::test::temp_home home;
  auto run = run_graph(regression_graph(), home.path());
  require_succeeded(run);
  auto [first, final] = first_and_final_train_loss(run);
  BOOST_TEST(final < first / 4, "first " << first << ", final " << final);
  BOOST_TEST(run.metrics["eval"]["loss"].get<double>() < first / 4);
  // Regression has no accuracy.
  BOOST_TEST(!run.metrics["eval"].contains("accuracy"));
  BOOST_TEST(!run.metrics["loop"].contains("final_val_accuracy"));
}

BOOST_AUTO_TEST_CASE(a_loss_that_does_not_fit_the_targets_is_refused) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "loss")["kind"] = "mse";
  expect_node_failure(run_graph(doc, home.path()), "TrainingLoop", "loop",
                      {"mse", "class labels", "cross_entropy"});

  doc = regression_graph();
  params(doc, "loss")["kind"] = "cross_entropy";
  expect_node_failure(run_graph(doc, home.path()), "TrainingLoop", "loop",
                      {"cross_entropy", "regression"});
}

// mse would broadcast 3 outputs against 1 target value (torch only prints a warning) and report a
// meaningless loss.
BOOST_AUTO_TEST_CASE(mse_with_more_outputs_than_targets_is_refused) {
  cdui::test::temp_home home;
  json doc = regression_graph();
  params(doc, "model")["layers"][0]["out_features"] = 3;
  params(doc, "loop")["epochs"] = 1;
  expect_node_failure(run_graph(doc, home.path()), "TrainingLoop", "loop", {"3 outputs"});
}

// Optimizer

BOOST_AUTO_TEST_CASE(every_optimizer_reduces_the_loss_on_moons) {
  cdui::test::temp_home home;
  std::vector<json> optimizers{
    {{"name", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}},
    {{"name", "adam"}, {"lr", 0.01}},
    {{"name", "adamw"}, {"lr", 0.01}, {"weight_decay", 0.01}},
    {{"name", "rmsprop"}, {"lr", 0.005}},
  };
  for (const auto& opt : optimizers) {
    BOOST_TEST_CONTEXT(opt.dump()) {
      json doc = moons_graph();
      params(doc, "opt") = opt;
      params(doc, "loop")["epochs"] = 4;
      auto run = run_graph(doc, home.path());
      require_succeeded(run);
      BOOST_TEST(run.config("loop")["optimizer"] == opt["name"]);
      auto [first, final] = first_and_final_train_loss(run);
      BOOST_TEST(final < first * 0.8, "first " << first << ", final " << final);
    }
  }
}

// LRScheduler

BOOST_AUTO_TEST_CASE(a_step_schedule_with_gamma_0_freezes_the_model_after_the_first_step) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "loop")["epochs"] = 3;
  add_edge(doc, "test_loader.dataloader", "loop.val_dataloader");
  auto free_run = run_graph(doc, home.path());
  require_succeeded(free_run);
  auto free_val = free_run.series("loop", "val_loss");
  BOOST_REQUIRE_EQUAL(free_val.size(), 3u);
  BOOST_TEST(free_val[2] != free_val[1]);

  add_node(doc, "schedule", "LRScheduler", {{"kind", "step"}, {"step_size", 1}, {"gamma", 0.0}});
  add_edge(doc, "schedule.scheduler", "loop.scheduler");
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  auto val = run.series("loop", "val_loss");
  BOOST_REQUIRE_EQUAL(val.size(), 3u);
  // The first epoch trains as without a schedule; after it the rate is 0 and nothing changes.
  BOOST_TEST(val[0] == free_val[0]);
  BOOST_TEST(val[1] == val[0]);
  BOOST_TEST(val[2] == val[0]);
  BOOST_TEST(run.metrics["eval"]["loss"].get<double>() == val[0]);
}

BOOST_AUTO_TEST_CASE(a_cosine_schedule_reaches_eta_min_at_t_max) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "loop")["epochs"] = 4;
  add_edge(doc, "test_loader.dataloader", "loop.val_dataloader");
  // lr per epoch: 0.01, 0.005, 0, 0 (t is capped at t_max).
  add_node(doc, "schedule", "LRScheduler", {{"kind", "cosine"}, {"t_max", 2}});
  add_edge(doc, "schedule.scheduler", "loop.scheduler");
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  auto val = run.series("loop", "val_loss");
  BOOST_REQUIRE_EQUAL(val.size(), 4u);
  BOOST_TEST(val[1] != val[0]);
  BOOST_TEST(val[2] == val[1]);
  BOOST_TEST(val[3] == val[1]);
}

// TrainingLoop

BOOST_AUTO_TEST_CASE(max_steps_stops_at_exactly_that_many_steps) {
  cdui::test::temp_home home;
  json doc = moons_graph();  // 8 batches per epoch
  params(doc, "loop")["epochs"] = 5;
  params(doc, "loop")["max_steps"] = 11;
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  const auto& loop = run.metrics["loop"];
  BOOST_TEST(loop["total_steps"] == 11);
  BOOST_TEST(loop["total_batches"] == 11);
  BOOST_TEST(loop["stopped_at_max_steps"] == true);
  BOOST_TEST(run.of_type("progress").size() == 11u);
  BOOST_TEST(run.of_type("progress").back()["step"] == 11);
  // The run still goes on to the nodes after the loop.
  BOOST_TEST(run.metrics["eval"]["samples"] == 256);

  // On an epoch boundary: exactly one whole epoch.
  params(doc, "loop")["max_steps"] = 8;
  auto whole = run_graph(doc, home.path());
  require_succeeded(whole);
  BOOST_TEST(whole.metrics["loop"]["total_steps"] == 8);
  BOOST_TEST(whole.metrics["loop"]["total_epochs_run"] == 1);
  BOOST_TEST(whole.metrics["loop"]["stopped_at_max_steps"] == true);
}

BOOST_AUTO_TEST_CASE(an_epoch_cut_short_by_max_steps_does_not_count) {
  cdui::test::temp_home home;
  json doc = moons_graph();  // 8 batches per epoch
  add_edge(doc, "test_loader.dataloader", "loop.val_dataloader");
  add_node(doc, "ckpt", "CheckpointSaver", {{"path", "ckpt.pt"}});
  add_edge(doc, "loop.model", "ckpt.model");
  add_edge(doc, "loop.optimizer_state", "ckpt.optimizer_state");

  // The same seed trains the same first epoch: its train_loss is the one to report.
  params(doc, "loop")["epochs"] = 1;
  auto one_epoch = run_graph(doc, home.path());
  require_succeeded(one_epoch);
  auto first_epoch_loss = one_epoch.metrics["loop"]["final_train_loss"].get<double>();

  // 11 steps: epoch 1 whole, epoch 2 stopped after 3 of its 8 batches.
  params(doc, "loop")["epochs"] = 5;
  params(doc, "loop")["max_steps"] = 11;
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  const auto& loop = run.metrics["loop"];
  BOOST_TEST(loop["stopped_at_max_steps"] == true);
  BOOST_TEST(loop["total_batches"] == 11);
  BOOST_TEST(loop["total_epochs_run"] == 1);
  BOOST_TEST(run.steps("loop", "train_loss") == std::vector<std::int64_t>({1}),
             boost::test_tools::per_element());
  BOOST_TEST(loop["final_train_loss"].get<double>() == first_epoch_loss);
  // Validation still measures the model as max_steps left it, under the partial epoch's number.
  BOOST_TEST(run.steps("loop", "val_loss") == std::vector<std::int64_t>({1, 2}),
             boost::test_tools::per_element());
  BOOST_TEST(loop["final_val_loss"].get<double>() == run.series("loop", "val_loss").back());
  // A resume from this checkpoint runs epoch 2 again.
  BOOST_TEST(run.metrics["ckpt"]["epoch"] == 1);

  // Stopped inside the first epoch: no epoch counts, and there is no train_loss to report.
  params(doc, "loop")["max_steps"] = 3;
  auto partial = run_graph(doc, home.path());
  require_succeeded(partial);
  BOOST_TEST(partial.metrics["loop"]["total_epochs_run"] == 0);
  BOOST_TEST(partial.metrics["loop"]["final_train_loss"].is_null());
  BOOST_TEST(partial.series("loop", "train_loss").empty());
  BOOST_TEST(partial.steps("loop", "val_loss") == std::vector<std::int64_t>({1}),
             boost::test_tools::per_element());
  BOOST_TEST(partial.metrics["ckpt"]["epoch"] == 0);
}

BOOST_AUTO_TEST_CASE(without_max_steps_every_epoch_runs) {
  cdui::test::temp_home home;
  auto run = run_graph(moons_graph(), home.path());
  require_succeeded(run);
  const auto& loop = run.metrics["loop"];
  BOOST_TEST(loop["total_steps"] == 24);
  BOOST_TEST(loop["total_batches"] == 24);
  BOOST_TEST(loop["total_epochs_run"] == 3);
  BOOST_TEST(loop["stopped_at_max_steps"] == false);
  BOOST_TEST(loop["precision"] == "fp32");
  BOOST_TEST(run.config("loop")["precision"] == "fp32");
  BOOST_TEST(run.config("loop")["epochs"] == 3);
  BOOST_TEST(run.config("loop")["start_epoch"] == 1);
  BOOST_TEST(run.config("loop")["device"] == "cpu");
  BOOST_TEST(loop["final_val_loss"].is_null());  // no val_dataloader
  BOOST_TEST(run.steps("loop", "train_loss") == std::vector<std::int64_t>({1, 2, 3}));
}

BOOST_AUTO_TEST_CASE(one_progress_event_per_batch_with_interval_0) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "data")["n_samples"] = 100;  // 4 batches
  params(doc, "loop")["epochs"] = 2;
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  auto progress = run.of_type("progress");
  BOOST_REQUIRE_EQUAL(progress.size(), 8u);
  for (std::size_t i = 0; i < progress.size(); ++i) {
    BOOST_TEST(progress[i]["node"] == "loop");
    BOOST_TEST(progress[i]["step"] == i + 1);
    BOOST_TEST(progress[i]["epoch"] == i / 4 + 1);
    BOOST_TEST(progress[i]["batch"] == i % 4 + 1);
    BOOST_TEST(progress[i]["batches"] == 4);
    BOOST_TEST(progress[i]["epochs"] == 2);
    BOOST_TEST(progress[i]["loss"].get<double>() > 0.0);
  }
}

BOOST_AUTO_TEST_CASE(a_long_progress_interval_still_reports_each_epochs_first_and_last_batch) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "loop")["progress_interval_ms"] = 60'000;
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  auto progress = run.of_type("progress");
  BOOST_REQUIRE_EQUAL(progress.size(), 6u);  // 3 epochs x (first, last)
  for (std::size_t i = 0; i < progress.size(); ++i)
    BOOST_TEST(progress[i]["batch"] == (i % 2 == 0 ? 1 : 8));
}

BOOST_AUTO_TEST_CASE(validation_metrics_come_once_per_epoch) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  add_edge(doc, "test_loader.dataloader", "loop.val_dataloader");
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  auto val_loss = run.series("loop", "val_loss");
  auto val_accuracy = run.series("loop", "val_accuracy");
  BOOST_TEST(run.steps("loop", "val_loss") == std::vector<std::int64_t>({1, 2, 3}));
  BOOST_TEST(run.steps("loop", "val_accuracy") == std::vector<std::int64_t>({1, 2, 3}));
  BOOST_REQUIRE_EQUAL(val_accuracy.size(), 3u);
  for (auto a : val_accuracy)
    BOOST_TEST((a >= 0.0 && a <= 1.0));
  BOOST_TEST(run.metrics["loop"]["final_val_loss"].get<double>() == val_loss.back());
  BOOST_TEST(run.metrics["loop"]["final_val_accuracy"].get<double>() == val_accuracy.back());
  // The last validation is the evaluation of the same model on the same data.
  BOOST_TEST(run.metrics["eval"]["accuracy"].get<double>() == val_accuracy.back());
  BOOST_TEST(run.metrics["eval"]["loss"].get<double>() == val_loss.back(),
             boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(train_loss_batch_comes_at_each_optimizer_step_and_val_loss_step_at_each_validation_batch) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "data")["n_samples"] = 100;  // 4 batches of training
  params(doc, "test_data")["n_samples"] = 100;  // 4 of validation: 30, 30, 30, 10
  params(doc, "test_loader")["batch_size"] = 30;
  params(doc, "loop")["epochs"] = 2;
  params(doc, "loop")["accumulate_steps"] = 2;
  add_edge(doc, "test_loader.dataloader", "loop.val_dataloader");
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  // 8 batches in windows of 2: at each of the 4 steps, the mean of its 2 batch losses (as the
  // progress events showed them).
  std::vector<double> losses;
  for (const auto& p : run.of_type("progress"))
    losses.push_back(p["loss"].get<double>());
  BOOST_REQUIRE_EQUAL(losses.size(), 8u);
  BOOST_TEST(run.steps("loop", "train_loss_batch") == std::vector<std::int64_t>({1, 2, 3, 4}));
  auto batch_series = run.series("loop", "train_loss_batch");
  BOOST_REQUIRE_EQUAL(batch_series.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i)
    BOOST_TEST(batch_series[i] == (losses[2 * i] + losses[2 * i + 1]) / 2, boost::test_tools::tolerance(1e-12));
  // Every 3rd step: the mean over those 3 steps' 6 batches.
  params(doc, "loop")["train_loss_batch_every"] = 3;
  auto sparse = run_graph(doc, home.path());
  require_succeeded(sparse);
  BOOST_TEST(sparse.steps("loop", "train_loss_batch") == std::vector<std::int64_t>({3}));
  auto every_3 = sparse.series("loop", "train_loss_batch");
  BOOST_REQUIRE_EQUAL(every_3.size(), 1u);
  BOOST_TEST(every_3[0] == (batch_series[0] + batch_series[1] + batch_series[2]) / 3,
             boost::test_tools::tolerance(1e-12));
  // Each validation batch's loss, numbered over the run; over an epoch they weigh up to val_loss.
  BOOST_TEST(run.steps("loop", "val_loss_step") == std::vector<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8}));
  auto steps = run.series("loop", "val_loss_step");
  auto val_loss = run.series("loop", "val_loss");
  BOOST_REQUIRE_EQUAL(steps.size(), 8u);
  BOOST_REQUIRE_EQUAL(val_loss.size(), 2u);
  for (std::size_t e = 0; e < 2; ++e) {
    auto at = [&](std::size_t i) { return steps[4 * e + i]; };
    BOOST_TEST((30 * (at(0) + at(1) + at(2)) + 10 * at(3)) / 100 == val_loss[e],
               boost::test_tools::tolerance(1e-9));
  }
  // 0 turns the batch series off.
  params(doc, "loop")["train_loss_batch_every"] = 0;
  auto quiet = run_graph(doc, home.path());
  require_succeeded(quiet);
  BOOST_TEST(quiet.series("loop", "train_loss_batch").empty());
}

BOOST_AUTO_TEST_CASE(grad_clip_norm_bounds_each_update) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "opt") = {{"name", "sgd"}, {"lr", 0.5}};
  add_edge(doc, "test_loader.dataloader", "loop.val_dataloader");
  auto free_run = run_graph(doc, home.path());
  require_succeeded(free_run);
  auto free_val = free_run.series("loop", "val_loss");

  // Each step moves the weights by at most lr * 1e-6, so the loss barely moves.
  params(doc, "loop")["grad_clip_norm"] = 1e-6;
  auto clipped = run_graph(doc, home.path());
  require_succeeded(clipped);
  auto val = clipped.series("loop", "val_loss");
  BOOST_REQUIRE_EQUAL(val.size(), 3u);
  BOOST_REQUIRE_EQUAL(free_val.size(), 3u);
  BOOST_TEST(std::abs(val[2] - val[0]) < 1e-4);
  BOOST_TEST(std::abs(free_val[2] - free_val[0]) > 1e-2);
}

BOOST_AUTO_TEST_CASE(the_stop_flag_is_honoured_between_batches) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "loop")["epochs"] = 50;
  int progress = 0;
  cdui::test::run_options options;
  options.on_event = [&](const cdui::test::recorded_event& e, std::atomic<bool>& stop) {
    if (e.type == "progress" && ++progress == 3)
      stop = true;
  };
  auto run = run_graph(doc, home.path(), options);
  BOOST_TEST((run.outcome.status == run_status::cancelled));
  BOOST_TEST(run.outcome.error.empty());
  BOOST_TEST(run.of_type("execution_stopped").size() == 1u);
  BOOST_TEST(run.of_type("execution_complete").empty());
  BOOST_TEST(run.of_type("execution_error").empty());
  BOOST_TEST(run.metrics["loop"]["total_batches"] == 3);
  BOOST_TEST(run.metrics["loop"]["total_epochs_run"] == 0);
  BOOST_TEST(run.of_type("progress").size() == 3u);
  // Nodes after the loop do not run.
  BOOST_TEST(!run.metrics.contains("eval"));
  for (const auto& s : run.of_type("node_status"))
    BOOST_TEST(s["node"] != "eval");
  BOOST_TEST(run.of_type("execution_stopped")[0]["metrics"] == run.metrics);
}

BOOST_AUTO_TEST_CASE(a_stop_before_the_run_starts_runs_no_node) {
  cdui::test::temp_home home;
  cdui::test::run_options options;
  options.on_event = [](const cdui::test::recorded_event& e, std::atomic<bool>& stop) {
    if (e.type == "execution_start")
      stop = true;
  };
  auto run = run_graph(moons_graph(), home.path(), options);
  BOOST_TEST((run.outcome.status == run_status::cancelled));
  BOOST_TEST(run.of_type("node_status").empty());
  BOOST_TEST(run.of_type("execution_stopped").size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_device_this_machine_lacks_falls_back_to_cpu_with_a_warning) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "loop")["device"] = "cuda";
  params(doc, "loop")["epochs"] = 1;
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  BOOST_TEST(run.config("loop")["device"] == "cpu");
  auto warnings = run.of_type("run_warning");
  BOOST_REQUIRE_EQUAL(warnings.size(), 1u);
  BOOST_TEST(warnings[0]["kind"] == "device_fallback");
  BOOST_TEST(warnings[0]["node"] == "loop");
  BOOST_TEST(contains(warnings[0]["message"].get<std::string>(), "loop"));
}

BOOST_AUTO_TEST_CASE(a_loop_set_to_auto_follows_the_runs_card_not_the_machines) {
  // A node whose device is auto follows the run's device (its first card; docs/graph-format.md, "Devices").
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "loop")["device"] = "auto";
  params(doc, "loop")["epochs"] = 1;
  auto run = run_graph(doc, home.path(), on_sim_card("sim:1", 2));
  require_succeeded(run);
  BOOST_TEST(run.config("loop")["device"] == "sim:1");
  BOOST_TEST(run.of_type("run_warning").empty());
}

BOOST_AUTO_TEST_CASE(a_worker_runs_fallback_names_its_cards_and_the_workers) {
  // A run on the worker's sim:1 sees it as sim:0; a loop pinned to sim:1 names a card the run lacks.
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "loop")["device"] = "sim:1";
  params(doc, "loop")["epochs"] = 1;
  auto options = on_sim_card("sim:0", 1);
  options.device_aliases = {{"sim:0", "sim:1"}};
  auto run = run_graph(doc, home.path(), options);
  require_succeeded(run);
  BOOST_TEST(run.config("loop")["device"] == "sim:0");
  auto warnings = run.of_type("run_warning");
  BOOST_REQUIRE_EQUAL(warnings.size(), 1u);
  BOOST_TEST(warnings[0]["kind"] == "device_fallback");
  BOOST_TEST(warnings[0]["message"]
             == "Node loop (TrainingLoop) is set to device sim:1; this run has 1 card (sim:0 = the "
                "worker's sim:1), so when it executes, it runs on sim:0.");
}

BOOST_AUTO_TEST_CASE(the_events_of_a_run_come_in_order) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "loop")["epochs"] = 1;
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  BOOST_REQUIRE(!run.events.empty());
  BOOST_TEST(run.events.front().type == "execution_start");
  BOOST_TEST(run.events.back().type == "execution_complete");
  BOOST_TEST(run.events.back().data["metrics"] == run.metrics);
  // Each of the nine nodes runs once and completes.
  int running = 0, completed = 0;
  for (const auto& s : run.of_type("node_status")) {
    running += s["status"] == "running";
    completed += s["status"] == "completed";
  }
  BOOST_TEST(running == 9);
  BOOST_TEST(completed == 9);
}

// EvaluateModel

BOOST_AUTO_TEST_CASE(an_mlp_learns_moons) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "data")["n_samples"] = 512;
  params(doc, "model")["layers"] = R"([
    {"type": "Linear", "out_features": 32}, {"type": "ReLU"},
    {"type": "Linear", "out_features": 32}, {"type": "ReLU"},
    {"type": "Linear", "out_features": 2}
  ])"_json;
  params(doc, "loop")["epochs"] = 20;
  params(doc, "loop")["progress_interval_ms"] = 100;
  auto run = run_graph(doc, home.path());
  require_succeeded(run);
  auto accuracy = run.metrics["eval"]["accuracy"].get<double>();
  BOOST_TEST(accuracy >= 0.95);
  BOOST_TEST(run.metrics["eval"]["samples"] == 256);
  BOOST_TEST(run.series("eval", "accuracy") == std::vector<double>({accuracy}));
  BOOST_TEST(run.metrics["eval"]["loss"].get<double>() < 0.2);
}

// failures

BOOST_AUTO_TEST_CASE(a_failing_node_fails_the_run_naming_type_and_id) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  params(doc, "data") = {{"name", "csv"}, {"path", (home.path() / "missing.csv").string()}};
  auto run = run_graph(doc, home.path());
  expect_node_failure(run, "Dataset", "data", {"missing.csv"});
  // The failing node is marked failed, nothing after it runs.
  bool marked = false;
  for (const auto& s : run.of_type("node_status")) {
    if (s["node"] == "data" && s["status"] == "failed")
      marked = true;
    BOOST_TEST(s["node"] != "loop");
  }
  BOOST_TEST(marked);
}

BOOST_AUTO_TEST_CASE(a_model_for_other_data_is_refused_by_the_loop) {
  cdui::test::temp_home home;
  json doc = moons_graph();
  // The model is shaped for 3 features, the loader gives 2.
  params(doc, "model")["input_shape"] = {3};
  auto& edges = doc["edges"];
  edges.erase(std::remove_if(edges.begin(), edges.end(),
                             [](const json& e) { return e["to"] == "model.dataset"; }),
              edges.end());
  auto run = run_graph(doc, home.path());
  expect_node_failure(run, "TrainingLoop", "loop", {"another shape"});
}

// Files a Dataset reads (runtime/file_access.hpp)

namespace {

/// A csv classifier (testkit/graphs.hpp) over `path`: Linear(features -> classes), one epoch.
json csv_graph(const std::string& path, int classes, json extra = json::object()) {
  json data = {{"name", "csv"}, {"path", path}};
  data.update(extra);
  return cdui::test::training_graph_json(data, {{"batch_size", 4}},
                                         {{{"type", "Linear"}, {"out_features", classes}}},
                                         {{"name", "sgd"}, {"lr", 0.1}}, {{"epochs", 1}});
}

} // namespace

BOOST_AUTO_TEST_CASE(a_fifo_as_a_dataset_path_is_refused_at_once) {
  cdui::test::temp_home home;
  auto fifo = home.path() / "pipe.csv";
  BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No writer ever opens it: a reader that waited for one would hold the run for good.
  expect_node_failure(run_graph(csv_graph(fifo.string(), 2), home.path()), "Dataset", "data",
                      {"param 'path'", fifo.string(), "a FIFO", "regular files only"});
}

BOOST_AUTO_TEST_CASE(a_device_as_a_dataset_path_is_refused) {
  cdui::test::temp_home home;
  cdui::test::run_options options;
  options.data_roots = "/dev";  // even where an operator let runs read there
  expect_node_failure(run_graph(csv_graph("/dev/zero", 2), home.path(), options), "Dataset", "data",
                      {"'/dev/zero'", "a character device"});
  expect_node_failure(run_graph(csv_graph("zero", 2), home.path(), options), "Dataset", "data",
                      {"'/dev/zero'", "a character device"});
}

BOOST_AUTO_TEST_CASE(a_dataset_outside_the_data_roots_is_refused_naming_the_variable) {
  cdui::test::temp_home home, data;
  write_file(data.path() / "iris.csv", "a,label\n1,x\n2,y\n");
  cdui::test::run_options none;
  none.data_roots = "";
  auto path = (data.path() / "iris.csv").string();
  expect_node_failure(run_graph(csv_graph(path, 2), home.path(), none), "Dataset", "data",
                      {"param 'path'", path, "under no data root", "CODEFYUI_DATA_ROOTS"});
  // Named relative to a data root instead.
  cdui::test::run_options rooted;
  rooted.data_roots = data.path().string();
  require_succeeded(run_graph(csv_graph("iris.csv", 2), home.path(), rooted));
}

BOOST_AUTO_TEST_CASE(a_dataset_path_that_climbs_out_of_the_data_roots_fails_validation) {
  auto result = cdui::runtime::validate_graph(csv_graph("../etc/passwd", 2));
  BOOST_TEST_REQUIRE(std::holds_alternative<std::vector<cdui::runtime::graph_error>>(result));
  auto errors = std::get<std::vector<cdui::runtime::graph_error>>(result);
  BOOST_TEST_REQUIRE(errors.size() == 1u);
  BOOST_TEST(errors[0].message == "node 'data' (Dataset): param 'path' '../etc/passwd' leaves the "
                                  "data roots: a relative path must stay inside it");
}

BOOST_AUTO_TEST_CASE(a_one_column_csv_says_it_has_no_feature_columns) {
  cdui::test::temp_home home;
  auto path = home.path() / "labels.csv";
  write_file(path, "label\ncat\ndog\n");
  expect_node_failure(run_graph(csv_graph(path.string(), 2), home.path()), "Dataset", "data",
                      {"CSV '" + path.string() + "' has no feature columns",
                       "at least one feature column besides the label column 'label'"});
}

// Issue 10: a label that is not UTF-8 aborted the server (the event holding it could not be
// written as JSON) and interrupted every run beside it.
BOOST_AUTO_TEST_CASE(labels_that_are_not_utf8_are_data_and_messages_show_them_replaced) {
  cdui::test::temp_home home;
  auto path = home.path() / "latin1.csv";
  // "caf\xe9" and "na\xefve" in Latin-1: two classes, told apart byte for byte.
  write_file(path, "x,label\n0,caf\xe9\n1,na\xefve\n0,caf\xe9\n1,na\xefve\n");
  auto trained = run_graph(csv_graph(path.string(), 2), home.path());
  require_succeeded(trained);
  BOOST_TEST(trained.metrics["data"]["samples"] == 4);

  auto refused = run_graph(csv_graph(path.string(), 2, {{"classes", {"cafe", "naive"}}}), home.path());
  expect_node_failure(refused, "Dataset", "data",
                      {"line 2", "the label 'caf\xEF\xBF\xBD' is not in param 'classes'"});
  BOOST_TEST(cdui::text::is_utf8(refused.outcome.error));
  for (const auto& e : refused.events)
    BOOST_TEST(cdui::text::is_utf8(e.data.dump(-1, ' ', false, json::error_handler_t::strict)));

  write_file(path, "x\xff,label\n1\xfe,a\n");
  auto cell = run_graph(csv_graph(path.string(), 2), home.path());
  expect_node_failure(cell, "Dataset", "data",
                      {"column 'x\xEF\xBF\xBD'", "'1\xEF\xBF\xBD' is not a number"});
  BOOST_TEST(cdui::text::is_utf8(cell.outcome.error));
}

BOOST_AUTO_TEST_SUITE_END()
