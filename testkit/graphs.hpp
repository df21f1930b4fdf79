#pragma once
// The graphs that unit tests, integration tests and benchmarks train: one builder of the standard
// training graph, one moons graph with the knobs every user needs, and the bodies that send them.

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cdui::test {

/// The standard training graph as a JSON object: Dataset "data" -> DataLoader "loader" and Model
/// "model" -> TrainingLoop "loop", with Loss "loss" and Optimizer "opt". Each argument is the params
/// object of its node (`layers` is the Model's layer list). Tests and benchmarks add nodes to it.
inline nlohmann::json training_graph_json(const nlohmann::json& data, const nlohmann::json& loader,
                                          const nlohmann::json& layers, const nlohmann::json& opt,
                                          const nlohmann::json& loop) {
  return {
    {"nodes",
     {{{"id", "data"}, {"type", "Dataset"}, {"params", data}},
      {{"id", "loader"}, {"type", "DataLoader"}, {"params", loader}},
      {{"id", "model"}, {"type", "Model"}, {"params", {{"layers", layers}}}},
      {{"id", "loss"}, {"type", "Loss"}},
      {{"id", "opt"}, {"type", "Optimizer"}, {"params", opt}},
      {{"id", "loop"}, {"type", "TrainingLoop"}, {"params", loop}}}},
    {"edges",
     {{{"from", "data.dataset"}, {"to", "loader.dataset"}},
      {{"from", "data.dataset"}, {"to", "model.dataset"}},
      {{"from", "model.model"}, {"to", "loop.model"}},
      {{"from", "loader.dataloader"}, {"to", "loop.dataloader"}},
      {{"from", "loss.loss_fn"}, {"to", "loop.loss_fn"}},
      {{"from", "opt.optimizer"}, {"to", "loop.optimizer"}}}}};
}

/// What a moons graph is made of. The defaults are the short graph most tests submit; an unset
/// optional leaves its param out of the graph (the node's own default applies).
struct moons_options {
  int epochs = 1;
  std::optional<int> max_steps = 0;
  /// The loop's device; nullopt: the run's device decides.
  std::optional<std::string> device = "cpu";
  /// The width of the MLP's hidden layer: 2-hidden-2.
  int hidden = 16;
  int samples = 512;
  std::optional<double> noise;
  /// The training loader's shuffle.
  std::optional<bool> shuffle;
  /// The Loss node's `kind`.
  std::optional<std::string> loss_kind;
  std::optional<int> progress_interval_ms;
  /// A test split ("test_data", "test_loader", batches of 128, unshuffled) that an EvaluateModel
  /// "eval" scores the trained model on. Nodes in the order data, test_data, loader, test_loader,
  /// model, loss, opt, loop, eval; without it: data, loader, model, loss, opt, loop.
  bool evaluate = false;
};

/// A moons MLP graph (adam at 0.01, batches of 32) as a JSON object. `epochs` large makes a run
/// that lasts until it is cancelled.
inline nlohmann::json moons_graph_json(const moons_options& o) {
  nlohmann::json data{{"name", "moons"}, {"n_samples", o.samples}};
  if (o.noise)
    data["noise"] = *o.noise;
  nlohmann::json loader{{"batch_size", 32}};
  if (o.shuffle)
    loader["shuffle"] = *o.shuffle;
  nlohmann::json loop{{"epochs", o.epochs}};
  if (o.max_steps)
    loop["max_steps"] = *o.max_steps;
  if (o.device)
    loop["device"] = *o.device;
  if (o.progress_interval_ms)
    loop["progress_interval_ms"] = *o.progress_interval_ms;
  auto g = training_graph_json(data, loader,
                               {{{"type", "Linear"}, {"out_features", o.hidden}},
                                {{"type", "ReLU"}},
                                {{"type", "Linear"}, {"out_features", 2}}},
                               {{"name", "adam"}, {"lr", 0.01}}, loop);
  if (o.loss_kind)
    g["nodes"][3]["params"] = {{"kind", *o.loss_kind}};
  if (o.evaluate) {
    auto test_data = data;
    test_data["split"] = "test";
    auto& nodes = g["nodes"];
    using node = nlohmann::json;  // insert() takes a braced list as elements, not as one object
    nodes.insert(nodes.begin() + 1, node{{"id", "test_data"}, {"type", "Dataset"}, {"params", test_data}});
    nodes.insert(nodes.begin() + 3, node{{"id", "test_loader"},
                                         {"type", "DataLoader"},
                                         {"params", {{"batch_size", 128}, {"shuffle", false}}}});
    nodes.push_back(node{{"id", "eval"}, {"type", "EvaluateModel"}});
    auto& edges = g["edges"];
    edges.insert(edges.begin() + 1, node{{"from", "test_data.dataset"}, {"to", "test_loader.dataset"}});
    edges.push_back(node{{"from", "loop.model"}, {"to", "eval.model"}});
    edges.push_back(node{{"from", "test_loader.dataloader"}, {"to", "eval.dataloader"}});
    edges.push_back(node{{"from", "loss.loss_fn"}, {"to", "eval.loss_fn"}});
  }
  return g;
}

/// The short moons graph: `moons_options` with these four set.
inline nlohmann::json moons_graph_json(int epochs, int max_steps = 0, int hidden = 16,
                                       std::optional<std::string> device = "cpu") {
  moons_options o;
  o.epochs = epochs;
  o.max_steps = max_steps;
  o.hidden = hidden;
  o.device = std::move(device);
  return moons_graph_json(o);
}

/// The small moons classifier the runtime tests train: train and test splits of 256 samples with
/// noise 0.1, an MLP 2-32-2, a cross-entropy loss, three epochs with a progress event every batch,
/// and an EvaluateModel "eval" on the test split.
inline moons_options evaluated_moons() {
  moons_options o;
  o.epochs = 3;
  o.max_steps = std::nullopt;
  o.device = std::nullopt;
  o.hidden = 32;
  o.samples = 256;
  o.noise = 0.1;
  o.shuffle = true;
  o.loss_kind = "cross_entropy";
  o.progress_interval_ms = 0;
  o.evaluate = true;
  return o;
}

/// A CSV with `rows` rows of three features and a label (a, b, c, label); 3 million rows take
/// seconds to read.
inline void write_big_csv(const std::filesystem::path& file, int rows) {
  std::ofstream out{file};
  out << "a,b,c,label\n";
  for (int i = 0; i < rows; ++i)
    out << (i % 97) * 0.01 << ',' << (i % 89) * 0.02 << ',' << (i % 83) * 0.03 << ',' << i % 2 << '\n';
}

/// A graph that reads `csv` (batches of 256) and trains one epoch with sgd at 0.1: an MLP
/// 3-`hidden`-2, or with no hidden width a single Linear layer.
inline nlohmann::json csv_graph_json(const std::filesystem::path& csv, std::optional<int> hidden = 8) {
  nlohmann::json layers = nlohmann::json::array();
  if (hidden) {
    layers.push_back({{"type", "Linear"}, {"out_features", *hidden}});
    layers.push_back({{"type", "ReLU"}});
  }
  layers.push_back({{"type", "Linear"}, {"out_features", 2}});
  return training_graph_json({{"name", "csv"}, {"path", csv.string()}}, {{"batch_size", 256}}, layers,
                             {{"name", "sgd"}, {"lr", 0.1}}, {{"epochs", 1}});
}

/// A graph that does as little as a run can: one Dataset node with `params`.
inline nlohmann::json dataset_graph_json(const nlohmann::json& params) {
  return {{"nodes", {{{"id", "data"}, {"type", "Dataset"}, {"params", params}}}},
          {"edges", nlohmann::json::array()}};
}

/// A POST /api/runs body, seed 1: a moons run on `device` that trains until it is cancelled.
inline nlohmann::json endless_run(const std::string& device = "sim:0") {
  return {{"graph", moons_graph_json(1'000'000, 0, 16, device)}, {"options", {{"seed", 1}}}};
}

/// A POST /api/runs body, seed 1: one epoch of the moons graph on `device`.
inline nlohmann::json short_run(const std::string& device = "sim:0") {
  // One whole epoch (16 batches of 32), so that it reports a train_loss: an epoch that max_steps
  // cuts short reports none.
  return {{"graph", moons_graph_json(1, 0, 16, device)}, {"options", {{"seed", 1}}}};
}

/// A POST /api/runs body that queues `graph` on `devices` of `worker` ("any": the first with a
/// free card).
inline nlohmann::json body_on_worker(const nlohmann::json& graph, const std::string& worker,
                                     const std::vector<std::string>& devices) {
  return {{"graph", graph}, {"options", {{"target", {{"worker", worker}, {"devices", devices}}}}}};
}

} // namespace cdui::test
