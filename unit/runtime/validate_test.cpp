#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "runtime/layer_shapes.hpp"
#include "runtime/validate.hpp"
#include "unit/runtime/run_helpers.hpp"

using namespace cdui::runtime;
using nlohmann::json;

namespace {

std::vector<graph_error> errors_of(const validation_result& result) {
  if (std::holds_alternative<validated_graph>(result))
    BOOST_FAIL("the graph validated, but it should not have");
  return std::get<std::vector<graph_error>>(result);
}

std::vector<graph_error> errors_of(const json& doc) { return errors_of(validate_graph(doc)); }
std::vector<graph_error> errors_of(const std::string& text) {
  return errors_of(validate_graph(std::string_view{text}));
}

/// Requires an error about `node` and `field` whose message contains every one of `words`.
template <class Input>
graph_error expect_error(const Input& input, const std::string& node, const std::string& field,
                         std::vector<std::string> words) {
  auto errors = errors_of(input);
  for (const auto& e : errors) {
    if (e.node != node || e.field != field)
      continue;
    bool all = std::all_of(words.begin(), words.end(), [&](const std::string& w) {
      return e.message.find(w) != std::string::npos;
    });
    if (all)
      return e;
  }
  std::string wanted;
  for (const auto& w : words)
    wanted += " [" + w + "]";
  BOOST_FAIL("no error about node '" + node + "' field '" + field + "' containing" + wanted
             + "; the errors were:\n" + to_string(errors));
  return {};
}

/// A minimal valid graph: a dataset and a loader.
json data_and_loader() {
  return R"({
    "nodes": [
      {"id": "data", "type": "Dataset", "params": {"name": "moons"}},
      {"id": "loader", "type": "DataLoader", "params": {"batch_size": 16}}
    ],
    "edges": [{"from": "data.dataset", "to": "loader.dataset"}]
  })"_json;
}

std::string read_text(const std::string& path) {
  std::ifstream in{path};
  BOOST_REQUIRE_MESSAGE(in, "cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t position(const validated_graph& g, const std::string& id) {
  for (std::size_t k = 0; k < g.order.size(); ++k)
    if (g.g.nodes[g.order[k]].id == id)
      return k;
  BOOST_FAIL("node " + id + " is not in the order");
  return 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(validate_test)

BOOST_AUTO_TEST_CASE(an_unknown_node_type_is_named_with_its_node) {
  auto doc = data_and_loader();
  cdui::test::add_node(doc, "mystery", "Transformer");
  auto e = expect_error(doc, "mystery", "type", {"'mystery'", "unknown node type 'Transformer'"});
  // The sentence lists what would have worked.
  BOOST_TEST(e.message.find("TrainingLoop") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_unknown_param_is_named_with_its_node) {
  auto doc = data_and_loader();
  cdui::test::params(doc, "loader")["batchsize"] = 8;
  auto e = expect_error(doc, "loader", "batchsize", {"'loader'", "unknown param 'batchsize'"});
  BOOST_TEST(e.message.find("batch_size") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_missing_required_param_is_named) {
  auto doc = data_and_loader();
  cdui::test::params(doc, "data").erase("name");
  expect_error(doc, "data", "name", {"'data'", "missing param 'name'"});
}

BOOST_AUTO_TEST_CASE(a_param_of_the_wrong_type_is_named_with_what_it_got) {
  auto doc = data_and_loader();
  cdui::test::params(doc, "loader")["batch_size"] = "16";
  expect_error(doc, "loader", "batch_size", {"'loader'", "'batch_size'", "integer", "\"16\""});

  doc = data_and_loader();
  cdui::test::params(doc, "loader")["shuffle"] = 1;
  expect_error(doc, "loader", "shuffle", {"'loader'", "'shuffle'", "true or false"});

  doc = data_and_loader();
  cdui::test::params(doc, "loader")["batch_size"] = 2.5;
  expect_error(doc, "loader", "batch_size", {"'loader'", "'batch_size'", "integer", "2.5"});

  doc = data_and_loader();
  cdui::test::params(doc, "data")["name"] = "mnist";
  expect_error(doc, "data", "name", {"'data'", "'name'", "must be one of", "moons", "\"mnist\""});
}

BOOST_AUTO_TEST_CASE(an_out_of_range_param_is_named_with_its_range) {
  json doc = cdui::test::moons_graph();
  cdui::test::params(doc, "loop")["epochs"] = 0;
  expect_error(doc, "loop", "epochs", {"'loop'", "'epochs'", "between 1 and", "got 0"});

  doc = cdui::test::moons_graph();
  cdui::test::params(doc, "opt")["lr"] = -0.1;
  expect_error(doc, "opt", "lr", {"'opt'", "'lr'", "-0.1"});

  doc = cdui::test::moons_graph();
  cdui::test::params(doc, "loop")["max_steps"] = -1;
  expect_error(doc, "loop", "max_steps", {"'loop'", "'max_steps'", ">= 0", "got -1"});
}

BOOST_AUTO_TEST_CASE(an_unknown_precision_is_refused_naming_the_node_and_the_formats) {
  json doc = cdui::test::moons_graph();
  cdui::test::params(doc, "loop")["precision"] = "fp8";
  auto e = expect_error(doc, "loop", "precision",
                        {"node 'loop' (TrainingLoop)", "'precision'", "fp32, bf16, fp16", "\"fp8\""});
  BOOST_TEST(e.message == "node 'loop' (TrainingLoop): param 'precision' must be one of fp32, bf16, "
                          "fp16, got \"fp8\"");
  // A format the device may not honour is no validation error: the loop falls back when it runs.
  cdui::test::params(doc, "loop")["precision"] = "fp16";
  BOOST_TEST(std::holds_alternative<validated_graph>(validate_graph(doc)));
}

// Nodes read integers as int64: 2^64-1 would become -1 (max_steps -1 means "no limit"; a step
// schedule with step_size -1 raises the rate tenfold every epoch).
BOOST_AUTO_TEST_CASE(an_integer_beyond_int64_is_out_of_range) {
  json doc = cdui::test::moons_graph();
  cdui::test::params(doc, "loop")["max_steps"] = 18446744073709551615ULL;
  expect_error(doc, "loop", "max_steps", {"'loop'", "'max_steps'"});
}

BOOST_AUTO_TEST_CASE(an_unknown_output_port_is_named) {
  auto doc = data_and_loader();
  doc["edges"][0]["from"] = "data.samples";
  auto e = expect_error(doc, "data", "samples", {"'data'", "no output port 'samples'"});
  BOOST_TEST(e.message.find("dataset") != std::string::npos);  // lists the real outputs
}

BOOST_AUTO_TEST_CASE(an_unknown_input_port_is_named) {
  auto doc = data_and_loader();
  doc["edges"][0]["to"] = "loader.data";
  expect_error(doc, "loader", "data", {"'loader'", "no input port 'data'"});
}

BOOST_AUTO_TEST_CASE(an_edge_to_a_node_that_does_not_exist_is_named) {
  auto doc = data_and_loader();
  doc["edges"][0]["to"] = "lodaer.dataset";
  expect_error(doc, "lodaer", "", {"'lodaer'"});
}

BOOST_AUTO_TEST_CASE(a_port_type_mismatch_names_both_ends_and_types) {
  json doc = cdui::test::moons_graph();
  // A dataset where the loop wants a dataloader.
  for (auto& e : doc["edges"])
    if (e["to"] == "loop.dataloader")
      e["from"] = "data.dataset";
  expect_error(doc, "loop", "dataloader",
               {"data.dataset", "loop.dataloader", "type mismatch", "gives dataset",
                "takes dataloader"});
}

/// The graph without the edges into input `to` ("node.port").
json without_edges_to(json doc, const std::string& to) {
  auto& edges = doc["edges"];
  edges.erase(std::remove_if(edges.begin(), edges.end(), [&](const json& e) { return e["to"] == to; }),
              edges.end());
  return doc;
}

BOOST_AUTO_TEST_CASE(a_required_input_left_unconnected_is_named) {
  json doc = without_edges_to(cdui::test::moons_graph(), "loop.optimizer");
  expect_error(doc, "loop", "optimizer", {"'loop'", "required input 'optimizer'", "not connected"});
}

BOOST_AUTO_TEST_CASE(a_model_with_neither_a_dataset_nor_an_input_shape_is_refused) {
  // It validated, then failed as it ran: "the input shape is unknown".
  json doc = without_edges_to(cdui::test::moons_graph(), "model.dataset");
  expect_error(doc, "model", "dataset",
               {"'model'", "required input 'dataset'", "not connected, and param 'input_shape' is not set"});
  // The param stands in for the input.
  for (auto& n : doc["nodes"])
    if (n["id"] == "model")
      n["params"]["input_shape"] = {2};
  BOOST_TEST(std::holds_alternative<validated_graph>(validate_graph(doc)));
}

BOOST_AUTO_TEST_CASE(a_cycle_is_refused_naming_its_nodes) {
  // TrainingLoop.model -> CheckpointLoader.model -> TrainingLoop.model.
  json doc = cdui::test::moons_graph();
  cdui::test::add_node(doc, "resume", "CheckpointLoader", {{"path", "ckpt.pt"}});
  for (auto& e : doc["edges"])
    if (e["to"] == "loop.model")
      e["from"] = "resume.model";
  cdui::test::add_edge(doc, "loop.model", "resume.model");
  auto errors = errors_of(doc);
  BOOST_REQUIRE_EQUAL(errors.size(), 1u);
  const auto& message = errors[0].message;
  BOOST_TEST(message.find("cycle") != std::string::npos, message);
  BOOST_TEST(message.find("loop") != std::string::npos, message);
  BOOST_TEST(message.find("resume") != std::string::npos, message);
  // Nodes before or after the cycle are not on it.
  BOOST_TEST(message.find("eval") == std::string::npos, message);
  BOOST_TEST(message.find("test_loader") == std::string::npos, message);
  BOOST_TEST((errors[0].node == "loop" || errors[0].node == "resume"));
}

BOOST_AUTO_TEST_CASE(a_node_fed_by_itself_is_a_cycle) {
  json doc = cdui::test::moons_graph();
  for (auto& e : doc["edges"])
    if (e["to"] == "loop.model")
      e["from"] = "loop.model";
  auto errors = errors_of(doc);
  BOOST_REQUIRE_EQUAL(errors.size(), 1u);
  BOOST_TEST(errors[0].message.find("cycle") != std::string::npos);
  BOOST_TEST(errors[0].node == "loop");
}

BOOST_AUTO_TEST_CASE(an_empty_graph_is_refused) {
  expect_error(json{{"nodes", json::array()}, {"edges", json::array()}}, "", "nodes", {"empty"});
}

BOOST_AUTO_TEST_CASE(malformed_json_reports_the_line_and_column) {
  // The second comma on line 3 is column 16.
  std::string text = "{\n  \"nodes\": [\n    {\"id\": \"a\",, \"type\": \"Loss\"}\n  ]\n}\n";
  auto e = expect_error(text, "", "", {"malformed JSON", "line 3, column 16"});
  // Only one position is given: nlohmann's own "at line 1, column N" prefix is not repeated.
  BOOST_TEST(e.message.find("line", e.message.find("column")) == std::string::npos, e.message);

  // A string left open at the end of the text points at the end of line 2.
  expect_error(std::string{"{\"nodes\": [\n {\"id\": \"a"}, "", "", {"malformed JSON", "line 2"});
}

BOOST_AUTO_TEST_CASE(a_graph_file_nested_past_the_limit_is_malformed_not_a_crash) {
  // 100,000 levels in a param overflowed the stack of whatever parsed or copied it (issue 33).
  std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  std::string text = R"({"nodes": [{"id": "a", "type": "Loss", "params": {"weight": )" + deep + "}}]}";
  expect_error(text, "", "", {"malformed JSON", "deeper than 256 levels"});
}

BOOST_AUTO_TEST_CASE(a_duplicate_node_id_is_named) {
  auto doc = data_and_loader();
  cdui::test::add_node(doc, "data", "Dataset", {{"name", "circles"}});
  expect_error(doc, "data", "id", {"'data'", "more than one node"});
}

BOOST_AUTO_TEST_CASE(an_input_connected_twice_is_named) {
  auto doc = data_and_loader();
  cdui::test::add_node(doc, "other", "Dataset", {{"name", "circles"}});
  cdui::test::add_edge(doc, "other.dataset", "loader.dataset");
  expect_error(doc, "loader", "dataset", {"loader.dataset", "already connected"});
}

BOOST_AUTO_TEST_CASE(a_model_of_more_layers_than_the_limit_is_refused_at_once) {
  // 700,000 layers took 14.7 s of a request thread to validate (issue 33).
  json doc = cdui::test::moons_graph();
  auto layers = json::array();
  for (std::size_t i = 0; i < 700'000; ++i)
    layers.push_back({{"type", "ReLU"}});
  cdui::test::params(doc, "model")["layers"] = layers;
  expect_error(doc, "model", "layers", {"'model'", "has 700000 layers; a Model takes at most 10000"});
  layers.erase(layers.begin() + static_cast<std::ptrdiff_t>(cdui::runtime::max_model_layers), layers.end());
  layers.push_back({{"type", "Linear"}, {"out_features", 2}});
  cdui::test::params(doc, "model")["layers"] = layers;
  auto over = validate_graph(doc);
  BOOST_REQUIRE(std::holds_alternative<std::vector<graph_error>>(over));
  layers.erase(layers.begin());
  cdui::test::params(doc, "model")["layers"] = layers;
  auto at_limit = validate_graph(doc);
  BOOST_TEST(std::holds_alternative<validated_graph>(at_limit));
}

BOOST_AUTO_TEST_CASE(a_bad_model_layer_is_named_by_its_index) {
  json doc = cdui::test::moons_graph();
  cdui::test::params(doc, "model")["layers"] = R"([
    {"type": "Linear", "out_features": 8},
    {"type": "Sigmoidal"}
  ])"_json;
  expect_error(doc, "model", "layers", {"'model'", "layer 2", "unknown layer type 'Sigmoidal'"});

  doc = cdui::test::moons_graph();
  cdui::test::params(doc, "model")["layers"] = R"([{"type": "ReLU"}, {"type": "Linear"}])"_json;
  expect_error(doc, "model", "layers", {"'model'", "layer 2 (Linear)", "missing 'out_features'"});

  doc = cdui::test::moons_graph();
  cdui::test::params(doc, "model")["layers"] = R"([{"type": "Linear", "out_features": 0}])"_json;
  expect_error(doc, "model", "layers", {"'model'", "layer 1 (Linear)", "'out_features'", ">= 1"});

  doc = cdui::test::moons_graph();
  cdui::test::params(doc, "model")["layers"] = R"([{"type": "Dropout", "p": 1.5}])"_json;
  expect_error(doc, "model", "layers", {"'model'", "layer 1 (Dropout)", "'p'"});

  doc = cdui::test::moons_graph();
  cdui::test::params(doc, "model")["layers"] = R"([{"type": "Linear", "out_features": 2, "units": 3}])"_json;
  expect_error(doc, "model", "layers", {"'model'", "layer 1 (Linear)", "unknown field 'units'"});

  doc = cdui::test::moons_graph();
  cdui::test::params(doc, "model")["layers"] = json::array();
  expect_error(doc, "model", "layers", {"'model'", "empty"});
}

BOOST_AUTO_TEST_CASE(a_csv_dataset_needs_a_path) {
  auto doc = data_and_loader();
  cdui::test::params(doc, "data")["name"] = "csv";
  expect_error(doc, "data", "path", {"'data'", "'path'", "csv"});
}

BOOST_AUTO_TEST_CASE(momentum_is_refused_for_adam) {
  json doc = cdui::test::moons_graph();
  cdui::test::params(doc, "opt")["momentum"] = 0.9;
  expect_error(doc, "opt", "momentum", {"'opt'", "'momentum'", "adam"});
}

BOOST_AUTO_TEST_CASE(every_error_is_reported_at_once) {
  auto doc = data_and_loader();
  cdui::test::params(doc, "data")["noise"] = "high";
  cdui::test::params(doc, "loader")["batch_size"] = 0;
  auto errors = errors_of(doc);
  BOOST_TEST(errors.size() == 2u, to_string(errors));
}

BOOST_AUTO_TEST_CASE(the_example_graph_validates_with_defaults_and_a_producer_first_order) {
  auto text = read_text(std::string{CDUI_SOURCE_DIR} + "/examples/fashion_mnist_mlp.json");
  auto result = validate_graph(std::string_view{text});
  if (auto* errors = std::get_if<std::vector<graph_error>>(&result))
    BOOST_FAIL(to_string(*errors));
  const auto& g = std::get<validated_graph>(result);
  BOOST_REQUIRE_EQUAL(g.g.nodes.size(), 10u);
  BOOST_REQUIRE_EQUAL(g.order.size(), g.g.nodes.size());
  BOOST_REQUIRE_EQUAL(g.specs.size(), g.g.nodes.size());
  for (std::size_t i = 0; i < g.g.nodes.size(); ++i)
    BOOST_TEST(g.specs[i]->type == g.g.nodes[i].type);

  // Every node appears once in the order, and every producer comes before its consumers.
  auto sorted = g.order;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i)
    BOOST_TEST(sorted[i] == i);
  BOOST_REQUIRE_EQUAL(g.g.edges.size(), 12u);
  for (const auto& e : g.g.edges)
    BOOST_TEST(position(g, e.from.node) < position(g, e.to.node),
               e.from.node + " -> " + e.to.node);

  // Defaults fill what the file leaves out; what it gives is kept and remembered as given.
  auto node = [&](const std::string& id) -> const graph_node& {
    for (const auto& n : g.g.nodes)
      if (n.id == id)
        return n;
    BOOST_FAIL("no node " + id);
    throw;
  };
  const auto& loop = node("loop");
  BOOST_TEST(loop.params["epochs"] == 2);
  BOOST_TEST(loop.was_given("epochs"));
  BOOST_TEST(loop.params["max_steps"] == 0);
  BOOST_TEST(loop.params["grad_clip_norm"] == 0.0);
  BOOST_TEST(loop.params["progress_interval_ms"] == 100);
  BOOST_TEST(!loop.was_given("max_steps"));
  BOOST_TEST(node("train_loader").params["drop_last"] == false);
  BOOST_TEST(node("train_loader").params["batch_size"] == 64);
  BOOST_TEST(node("train_data").params["limit"] == 0);
  BOOST_TEST(node("train_data").params["root"] == "/usr/share/datasets/fashion-mnist");
  BOOST_TEST(node("save").params["path"] == "fashion_mnist_mlp.pt");
  BOOST_TEST(node("evaluate").params.is_object());
}

BOOST_AUTO_TEST_CASE(a_graph_without_edges_validates) {
  json doc = {{"nodes", {{{"id", "loss"}, {"type", "Loss"}}}}};
  auto result = validate_graph(doc);
  BOOST_REQUIRE(std::holds_alternative<validated_graph>(result));
  BOOST_TEST(std::get<validated_graph>(result).g.nodes[0].params["kind"] == "cross_entropy");
}

BOOST_AUTO_TEST_CASE(garbage_is_refused_without_a_crash) {
  std::vector<std::string> texts{
    "",
    "[]",
    "null",
    "42",
    "\"nodes\"",
    "{}",
    "{\"nodes\": 5}",
    "{\"nodes\": {}}",
    "{\"nodes\": [1]}",
    "{\"nodes\": [null, []]}",
    "{\"nodes\": [{}]}",
    "{\"nodes\": [{\"id\": 5, \"type\": \"Loss\"}]}",
    "{\"nodes\": [{\"id\": \"\", \"type\": \"Loss\"}]}",
    "{\"nodes\": [{\"id\": \"a\"}]}",
    "{\"nodes\": [{\"id\": \"a\", \"type\": 7}]}",
    "{\"nodes\": [{\"id\": \"a\", \"type\": \"Loss\", \"params\": []}]}",
    "{\"nodes\": [{\"id\": \"a\", \"type\": \"Loss\", \"params\": null}]}",
    "{\"nodes\": [{\"id\": \"a\", \"type\": \"Loss\", \"colour\": \"red\"}]}",
    "{\"nodes\": [{\"id\": \"a\", \"type\": \"Loss\"}], \"edges\": 3}",
    "{\"nodes\": [{\"id\": \"a\", \"type\": \"Loss\"}], \"edges\": [3]}",
    "{\"nodes\": [{\"id\": \"a\", \"type\": \"Loss\"}], \"edges\": [{\"from\": \"a.loss_fn\"}]}",
    "{\"nodes\": [{\"id\": \"a\", \"type\": \"Loss\"}], \"edges\": [{\"from\": \"nodot\", \"to\": \"a.x\"}]}",
    "{\"nodes\": [{\"id\": \"a\", \"type\": \"Loss\"}], \"edges\": [{\"from\": \"a.\", \"to\": \".x\"}]}",
    "{\"nodes\": [{\"id\": \"a\", \"type\": \"Loss\"}], \"edges\": [{\"from\": 1, \"to\": [2]}]}",
    "{\"nodes\": [{\"id\": \"m\", \"type\": \"Model\", \"params\": {\"layers\": 5}}]}",
    "{\"nodes\": [{\"id\": \"m\", \"type\": \"Model\", \"params\": {\"layers\": [5, null]}}]}",
    "{\"nodes\": [{\"id\": \"m\", \"type\": \"Model\", \"params\": {\"layers\": [{\"type\": 3}]}}]}",
    "{\"nodes\": [{\"id\": \"m\", \"type\": \"Model\", \"params\": {\"layers\": [{\"type\": \"Linear\", "
    "\"out_features\": \"ten\"}]}}]}",
    "{\"nodes\": [{\"id\": \"m\", \"type\": \"Model\", \"params\": {\"layers\": [{\"type\": \"ReLU\"}], "
    "\"input_shape\": [\"a\", -1]}}]}",
    "{\"nodes\": [{\"id\": \"d\", \"type\": \"Dataset\", \"params\": {\"name\": null}}]}",
    "{\"nodes\": [{\"id\": \"d\", \"type\": \"Dataset\", \"params\": {\"name\": \"csv\", \"path\": 3}}]}",
    "{\"nodes\": [{\"id\": \"o\", \"type\": \"Optimizer\", \"params\": {\"momentum\": \"x\"}}]}",
    "{\"nodes\": [{\"id\": \"l\", \"type\": \"TrainingLoop\", \"params\": {\"epochs\": "
    "99999999999999999999999}}]}",
    "{\"nodes\": [",
    "\xff\xfe{}",
  };
  for (const auto& text : texts) {
    BOOST_TEST_CONTEXT("input: " << text) {
      validation_result result;
      try {
        result = validate_graph(std::string_view{text});
      } catch (const std::exception& e) {
        BOOST_ERROR("validate_graph threw: " << e.what());
        continue;
      }
      BOOST_TEST_REQUIRE(std::holds_alternative<std::vector<graph_error>>(result));
      const auto& errors = std::get<std::vector<graph_error>>(result);
      BOOST_TEST(!errors.empty());
      for (const auto& e : errors)
        BOOST_TEST(!e.message.empty());
    }
  }
}

// Guards a fixed bug (runtime/validate.cpp, validate_graph(string_view)): nlohmann reports a number too large for a
// double ("1e400") as json::out_of_range (406), not json::parse_error, so it escapes validate_graph
// instead of becoming a "malformed JSON at line L, column C" error.
BOOST_AUTO_TEST_CASE(a_number_too_large_for_a_double_is_a_json_error) {
  std::string text = "{\"nodes\": [\n  {\"id\": \"l\", \"type\": \"TrainingLoop\",\n"
                     "   \"params\": {\"epochs\": 1e400}}]}";
  validation_result result;
  try {
    result = validate_graph(std::string_view{text});
  } catch (const std::exception& e) {
    BOOST_FAIL("validate_graph threw: " << e.what());
  }
  expect_error(result, "", "", {"line 3", "1e400"});
}

BOOST_AUTO_TEST_SUITE_END()
