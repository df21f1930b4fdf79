// The graph's memory key: one test per param or change that counts, and per one that does not.
#include <boost/test/unit_test.hpp>

#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/memory_key.hpp"
#include "runtime/validate.hpp"

using namespace cdui::runtime;
using nlohmann::json;

namespace {

/// examples/moons_mlp.json as it was when the key was made (a copy: the example may change).
json moons() {
  return json::parse(R"({
  "nodes": [
    {"id": "train_data", "type": "Dataset", "params": {"name": "moons", "split": "train", "n_samples": 2000, "noise": 0.1}},
    {"id": "test_data", "type": "Dataset", "params": {"name": "moons", "split": "test", "n_samples": 1000, "noise": 0.1}},
    {"id": "train_loader", "type": "DataLoader", "params": {"batch_size": 32}},
    {"id": "test_loader", "type": "DataLoader", "params": {"batch_size": 256, "shuffle": false}},
    {"id": "model", "type": "Model", "params": {"layers": [
      {"type": "Linear", "out_features": 32}, {"type": "Tanh"},
      {"type": "Linear", "out_features": 32}, {"type": "Tanh"},
      {"type": "Linear", "out_features": 2}]}},
    {"id": "loss", "type": "Loss", "params": {"kind": "cross_entropy"}},
    {"id": "optimizer", "type": "Optimizer", "params": {"name": "adam", "lr": 0.01}},
    {"id": "loop", "type": "TrainingLoop", "params": {"epochs": 20}},
    {"id": "evaluate", "type": "EvaluateModel"}
  ],
  "edges": [
    {"from": "train_data.dataset", "to": "train_loader.dataset"},
    {"from": "test_data.dataset", "to": "test_loader.dataset"},
    {"from": "train_data.dataset", "to": "model.dataset"},
    {"from": "model.model", "to": "loop.model"},
    {"from": "train_loader.dataloader", "to": "loop.dataloader"},
    {"from": "test_loader.dataloader", "to": "loop.val_dataloader"},
    {"from": "loss.loss_fn", "to": "loop.loss_fn"},
    {"from": "optimizer.optimizer", "to": "loop.optimizer"},
    {"from": "loop.model", "to": "evaluate.model"},
    {"from": "test_loader.dataloader", "to": "evaluate.dataloader"},
    {"from": "loss.loss_fn", "to": "evaluate.loss_fn"}
  ]})");
}

std::string key_of(const json& g) {
  auto key = memory_key(g);
  BOOST_REQUIRE(key.has_value());
  return *key;
}

/// The moons graph's key after `change`.
std::string changed(const std::function<void(json&)>& change) {
  auto g = moons();
  change(g);
  return key_of(g);
}

/// The node of `id` in g.
json& node(json& g, const std::string& id) {
  for (auto& n : g["nodes"])
    if (n["id"] == id)
      return n;
  throw std::invalid_argument("no node " + id);
}

/// Renames node `from` to `to`, in its edges too.
void rename(json& g, const std::string& from, const std::string& to) {
  node(g, from)["id"] = to;
  for (auto& e : g["edges"])
    for (const char* end : {"from", "to"}) {
      auto text = e[end].get<std::string>();
      if (text.rfind(from + ".", 0) == 0)
        e[end] = to + text.substr(from.size());
    }
}

/// A plugin node this server does not know, fed by the training data.
void add_plugin(json& g, json params) {
  g["nodes"].push_back({{"id", "aug"}, {"type", "PluginAugment"}, {"params", std::move(params)}});
  g["edges"].push_back({{"from", "train_data.dataset"}, {"to", "aug.dataset"}});
}

} // namespace

BOOST_AUTO_TEST_SUITE(memory_key_test)

BOOST_AUTO_TEST_CASE(the_key_of_a_fixed_graph_never_changes_silently) {
  // Measured peaks are stored under this key: a change here orphans every one of them. Change the
  // literal only with the key's format line (memory_key.cpp), on purpose.
  BOOST_TEST(key_of(moons()) == "3bf284d88870151976c67d4c81bb8d31744ddf027cffe53fec3d37710cfde74d");
  BOOST_TEST(key_of(moons()).size() == 64u);
}

BOOST_AUTO_TEST_CASE(a_validated_graph_has_the_key_of_its_json) {
  auto validated = validate_graph(moons());
  BOOST_REQUIRE(std::holds_alternative<validated_graph>(validated));
  BOOST_TEST(memory_key(std::get<validated_graph>(validated).g) == key_of(moons()));
}

// What counts.

BOOST_AUTO_TEST_CASE(the_batch_size_counts) {
  BOOST_TEST(changed([](json& g) { node(g, "train_loader")["params"]["batch_size"] = 64; }) != key_of(moons()));
}

BOOST_AUTO_TEST_CASE(a_layer_size_counts) {
  BOOST_TEST(changed([](json& g) { node(g, "model")["params"]["layers"][0]["out_features"] = 64; })
             != key_of(moons()));
}

BOOST_AUTO_TEST_CASE(the_precision_counts) {
  BOOST_TEST(changed([](json& g) { node(g, "loop")["params"]["precision"] = "bf16"; }) != key_of(moons()));
}

BOOST_AUTO_TEST_CASE(accumulate_steps_count) {
  BOOST_TEST(changed([](json& g) { node(g, "loop")["params"]["accumulate_steps"] = 4; }) != key_of(moons()));
}

BOOST_AUTO_TEST_CASE(the_datasets_name_counts) {
  BOOST_TEST(changed([](json& g) { node(g, "train_data")["params"]["name"] = "circles"; }) != key_of(moons()));
}

BOOST_AUTO_TEST_CASE(freezing_and_lora_count) {
  auto frozen = changed([](json& g) { node(g, "model")["params"]["freeze"] = {"Linear1"}; });
  auto adapted = changed([](json& g) { node(g, "model")["params"]["lora"] = {{"rank", 4}}; });
  BOOST_TEST(frozen != key_of(moons()));
  BOOST_TEST(adapted != key_of(moons()));
  BOOST_TEST(frozen != adapted);
}

BOOST_AUTO_TEST_CASE(the_optimizer_counts) {
  BOOST_TEST(changed([](json& g) { node(g, "optimizer")["params"]["name"] = "sgd"; }) != key_of(moons()));
}

BOOST_AUTO_TEST_CASE(the_wiring_counts) {
  // The evaluation reads the training batches instead of the test ones.
  BOOST_TEST(changed([](json& g) { g["edges"][9]["from"] = "train_loader.dataloader"; }) != key_of(moons()));
  // The same nodes, one edge fewer.
  BOOST_TEST(changed([](json& g) { g["edges"].erase(10); }) != key_of(moons()));
}

BOOST_AUTO_TEST_CASE(the_params_of_a_node_type_this_server_does_not_know_count) {
  auto plugin = changed([](json& g) { add_plugin(g, {{"crop", 24}}); });
  BOOST_TEST(plugin != key_of(moons()));
  BOOST_TEST(changed([](json& g) { add_plugin(g, {{"crop", 28}}); }) != plugin);
  // The universal exclusions hold for it too.
  BOOST_TEST(changed([](json& g) { add_plugin(g, {{"crop", 24}, {"seed", 3}, {"num_workers", 4}}); })
             == plugin);
  BOOST_TEST(counts_for_memory("PluginAugment", "crop"));
  BOOST_TEST(!counts_for_memory("PluginAugment", "epochs"));
}

// What does not count.

BOOST_AUTO_TEST_CASE(node_ids_do_not_count) {
  BOOST_TEST(changed([](json& g) { rename(g, "model", "net"); }) == key_of(moons()));
  // Two Datasets that trade ids: the same graph, told apart by their params and wiring.
  BOOST_TEST(changed([](json& g) {
               rename(g, "train_data", "tmp");
               rename(g, "test_data", "train_data");
               rename(g, "tmp", "test_data");
             })
             == key_of(moons()));
  // Nor does the order nodes and edges are listed in.
  BOOST_TEST(changed([](json& g) {
               std::reverse(g["nodes"].begin(), g["nodes"].end());
               std::reverse(g["edges"].begin(), g["edges"].end());
             })
             == key_of(moons()));
}

BOOST_AUTO_TEST_CASE(positions_do_not_count) {
  BOOST_TEST(changed([](json& g) { node(g, "model")["position"] = {{"x", 10}, {"y", 20}}; }) == key_of(moons()));
}

BOOST_AUTO_TEST_CASE(labels_do_not_count) {
  BOOST_TEST(changed([](json& g) { node(g, "model")["label"] = "my net"; }) == key_of(moons()));
}

BOOST_AUTO_TEST_CASE(seeds_do_not_count) {
  BOOST_TEST(changed([](json& g) { g["seed"] = 7; }) == key_of(moons()));
  BOOST_TEST(!counts_for_memory("TrainingLoop", "seed"));
}

BOOST_AUTO_TEST_CASE(epochs_do_not_count) {
  BOOST_TEST(changed([](json& g) { node(g, "loop")["params"]["epochs"] = 200; }) == key_of(moons()));
}

BOOST_AUTO_TEST_CASE(max_steps_do_not_count) {
  BOOST_TEST(changed([](json& g) { node(g, "loop")["params"]["max_steps"] = 50; }) == key_of(moons()));
}

BOOST_AUTO_TEST_CASE(the_learning_rate_does_not_count) {
  BOOST_TEST(changed([](json& g) { node(g, "optimizer")["params"]["lr"] = 0.5; }) == key_of(moons()));
}

BOOST_AUTO_TEST_CASE(loader_workers_do_not_count) {
  BOOST_TEST(changed([](json& g) { node(g, "train_loader")["params"]["num_workers"] = 8; }) == key_of(moons()));
  BOOST_TEST(!counts_for_memory("DataLoader", "workers"));
}

BOOST_AUTO_TEST_CASE(a_default_written_out_is_the_default_left_out) {
  BOOST_TEST(changed([](json& g) { node(g, "loop")["params"]["accumulate_steps"] = 1; }) == key_of(moons()));
  BOOST_TEST(changed([](json& g) { node(g, "train_loader")["params"]["shuffle"] = false; }) == key_of(moons()));
}

BOOST_AUTO_TEST_CASE(every_builtin_param_is_classified) {
  // The table of docs/graph-format.md ("The memory key"). A param added to a built-in node fails
  // here until it is put in one of the two lists (and, when it does not count, in memory_key.cpp).
  const std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> table{
    {"Dataset", {{"name", "split", "root", "limit", "n_samples", "n_features", "n_classes", "path",
                  "label_column", "task", "classes"},
                 {"noise", "factor", "cluster_std"}}},
    {"DataLoader", {{"batch_size", "drop_last"}, {"shuffle"}}},
    {"Model", {{"layers", "input_shape", "freeze", "lora", "checkpoint_activations", "checkpoint_granularity"}, {}}},
    {"Loss", {{"kind"}, {}}},
    {"Optimizer", {{"name", "momentum"}, {"lr", "weight_decay"}}},
    {"LRScheduler", {{}, {"kind", "step_size", "gamma", "t_max", "eta_min"}}},
    {"TrainingLoop", {{"device", "accumulate_steps", "precision", "strategy"},
                      {"epochs", "max_steps", "grad_clip_norm", "num_threads", "loss_scale",
                       "progress_interval_ms", "train_loss_batch_every", "checkpoint_every",
                       "checkpoint_every_steps", "keep_checkpoints"}}},
    {"EvaluateModel", {{}, {}}},
    {"ModelSaver", {{}, {"path", "merge_lora"}}},
    {"CheckpointSaver", {{}, {"path"}}},
    {"CheckpointLoader", {{}, {"path"}}},
  };
  for (const auto& [type, spec] : builtin_registry().all()) {
    auto row = table.find(type);
    BOOST_TEST_REQUIRE((row != table.end()), "node type " + type + " is not classified");
    const auto& [counted, left_out] = row->second;
    for (const auto& p : spec.params) {
      auto where = type + "." + p.name;
      BOOST_TEST((counted.count(p.name) + left_out.count(p.name)) == 1u, where + " is not classified");
      BOOST_TEST(counts_for_memory(type, p.name) == (counted.count(p.name) == 1), where);
    }
  }
}

BOOST_AUTO_TEST_CASE(what_is_not_a_graph_has_no_key) {
  BOOST_TEST(!memory_key(json::array()).has_value());
  BOOST_TEST(!memory_key(json{{"nodes", 3}}).has_value());
  BOOST_TEST(!memory_key(json::parse(R"({"nodes": [{"id": "a"}]})")).has_value());
  BOOST_TEST(!memory_key(json::parse(R"({"nodes": [{"id": "a", "type": "T", "params": 1}]})")).has_value());
  BOOST_TEST(!memory_key(json::parse(R"({"nodes": [{"id": "a", "type": "T"}, {"id": "a", "type": "T"}]})")).has_value());
  BOOST_TEST(!memory_key(json::parse(R"({"nodes": [{"id": "a", "type": "T"}],
                                         "edges": [{"from": "a.x", "to": "b.y"}]})")).has_value());
  BOOST_TEST(memory_key(json::parse(R"({"nodes": [{"id": "a", "type": "T"}]})")).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
