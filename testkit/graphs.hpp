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

/// A run whose batches each take a second or more on one core, with no stop check inside one (the
/// loop checks between batches): 12,288 moons in three batches through an MLP 2-2048-2048-2, a
/// train_loss_batch metric after every step, emitted after that batch's stop check. Tests of the
/// stop deadline cancel it once the first one came (first_step_done), so the cancel finds the
/// second batch executing. About 0.3 GB.
inline nlohmann::json slow_batches_graph_json() {
  return training_graph_json({{"name", "moons"}, {"n_samples", 12288}}, {{"batch_size", 4096}},
                             {{{"type", "Linear"}, {"out_features", 2048}},
                              {{"type", "ReLU"}},
                              {{"type", "Linear"}, {"out_features", 2048}},
                              {{"type", "ReLU"}},
                              {{"type", "Linear"}, {"out_features", 2}}},
                             {{"name", "sgd"}, {"lr", 0.01}},
                             {{"epochs", 1}, {"device", "cpu"}, {"train_loss_batch_every", 1}});
}

/// Whether `event` (an event object as the HTTP API gives it) is slow_batches_graph_json's first
/// train_loss_batch metric: the first batch's stop check is past, the second batch executing.
inline bool first_step_done(const nlohmann::json& event) {
  return event["type"] == "metric" && event["data"]["name"] == "train_loss_batch" && event["data"]["step"] == 1;
}

/// A CSV with `rows` rows of three features and a label (a, b, c, label); 3 million rows take
/// seconds to read (a cancel stops the read at its next stop check).
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

/// A generated graph of the static estimate's table (bench/estimate_bench.cpp,
/// unit/runtime/estimate_test.cpp): Fashion-MNIST (the first `samples` images) into an MLP or a
/// CNN, validated after the epoch on the first 512 test images in batches of `val_batch`, on the
/// CPU with one intra-op thread, `max_steps` optimizer steps.
struct sized_graph {
  /// MLP: Flatten, Linear(width), ReLU, Linear(width), ReLU, Linear(10). CNN: Conv2d(width, 3x3,
  /// padding 1), ReLU, MaxPool2d(2), Conv2d(2 x width), ReLU, MaxPool2d(2), Flatten, Linear(10).
  bool cnn = false;
  int width = 256;
  int batch = 64;
  std::string precision = "fp32";
  int accumulate = 1;
  std::string optimizer = "adam";
  double momentum = 0;
  /// The activation layers' type: ReLU, GELU or Tanh.
  std::string activation = "ReLU";
  /// Extra layers: Dropout(0.25) before the last Linear, BatchNorm (or, for an MLP, LayerNorm)
  /// after the first layer.
  bool dropout = false;
  bool batch_norm = false;
  bool layer_norm = false;
  int max_steps = 3;
  int samples = 2048;
  int val_batch = 256;
};

inline nlohmann::json sized_graph_json(const sized_graph& o) {
  using layer = nlohmann::json;
  std::vector<layer> layers;
  if (o.cnn) {
    layers = {{{"type", "Conv2d"}, {"out_channels", o.width}, {"kernel_size", 3}, {"padding", 1}},
              {{"type", "ReLU"}},
              {{"type", "MaxPool2d"}, {"kernel_size", 2}},
              {{"type", "Conv2d"}, {"out_channels", 2 * o.width}, {"kernel_size", 3}, {"padding", 1}},
              {{"type", "ReLU"}},
              {{"type", "MaxPool2d"}, {"kernel_size", 2}},
              {{"type", "Flatten"}},
              {{"type", "Linear"}, {"out_features", 10}}};
    if (o.batch_norm)
      layers.insert(layers.begin() + 1, layer{{"type", "BatchNorm2d"}});
  } else {
    layers = {{{"type", "Flatten"}},
              {{"type", "Linear"}, {"out_features", o.width}},
              {{"type", "ReLU"}},
              {{"type", "Linear"}, {"out_features", o.width}},
              {{"type", "ReLU"}},
              {{"type", "Linear"}, {"out_features", 10}}};
    if (o.batch_norm || o.layer_norm)
      layers.insert(layers.begin() + 2, layer{{"type", o.batch_norm ? "BatchNorm1d" : "LayerNorm"}});
  }
  for (auto& l : layers)
    if (l["type"] == "ReLU")
      l["type"] = o.activation;
  if (o.dropout)
    layers.insert(layers.end() - 1, layer{{"type", "Dropout"}, {"p", 0.25}});
  nlohmann::json opt{{"name", o.optimizer}, {"lr", 0.001}};
  if (o.momentum > 0)
    opt["momentum"] = o.momentum;
  auto g = training_graph_json({{"name", "fashion_mnist"}, {"limit", o.samples}},
                               {{"batch_size", o.batch}}, layers, opt,
                               {{"epochs", 1000},
                                {"max_steps", o.max_steps},
                                {"accumulate_steps", o.accumulate},
                                {"precision", o.precision},
                                {"num_threads", 1},
                                {"device", "cpu"}});
  using node = nlohmann::json;
  g["nodes"].push_back(node{{"id", "val_data"},
                            {"type", "Dataset"},
                            {"params", {{"name", "fashion_mnist"}, {"split", "test"}, {"limit", 512}}}});
  g["nodes"].push_back(node{{"id", "val_loader"},
                            {"type", "DataLoader"},
                            {"params", {{"batch_size", o.val_batch}, {"shuffle", false}}}});
  g["edges"].push_back(node{{"from", "val_data.dataset"}, {"to", "val_loader.dataset"}});
  g["edges"].push_back(node{{"from", "val_loader.dataloader"}, {"to", "loop.val_dataloader"}});
  return g;
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

/// A wide moons MLP for `cdui fit`'s tests (unit/runtime/fit_test.cpp, integration/cli_test.cpp),
/// whose activations grow visibly with the batch: 1,024 samples in batches of `batch`, an MLP
/// 2-1024-1024-2, and an EvaluateModel "eval" of the trained model over the training loader.
struct wide_moons {
  int batch = 256;
  int accumulate = 1;
  std::string precision = "fp32";
  /// sgd at 0.01 holds no state; adam holds two tensors per parameter from its first step on.
  std::string optimizer = "sgd";
  int epochs = 1;
  /// The loop's device; nullopt: the param's default (cpu).
  std::optional<std::string> device;
};

inline nlohmann::json wide_moons_graph_json(const wide_moons& o) {
  nlohmann::json loop{{"epochs", o.epochs}, {"accumulate_steps", o.accumulate},
                      {"precision", o.precision}};
  if (o.device)
    loop["device"] = *o.device;
  auto g = training_graph_json({{"name", "moons"}, {"n_samples", 1024}}, {{"batch_size", o.batch}},
                               {{{"type", "Linear"}, {"out_features", 1024}},
                                {{"type", "ReLU"}},
                                {{"type", "Linear"}, {"out_features", 1024}},
                                {{"type", "ReLU"}},
                                {{"type", "Linear"}, {"out_features", 2}}},
                               {{"name", o.optimizer}, {"lr", 0.01}}, loop);
  using node = nlohmann::json;
  g["nodes"].push_back(node{{"id", "eval"}, {"type", "EvaluateModel"}});
  g["edges"].push_back(node{{"from", "loop.model"}, {"to", "eval.model"}});
  g["edges"].push_back(node{{"from", "loader.dataloader"}, {"to", "eval.dataloader"}});
  return g;
}

} // namespace cdui::test
