#pragma once

#include <string>

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

/// A moons MLP graph (Dataset -> DataLoader -> Model -> TrainingLoop) as a JSON object. `epochs`
/// large makes a run that lasts until it is cancelled; `device` pins the loop's device.
inline nlohmann::json moons_graph_json(int epochs, int max_steps = 0, int hidden = 16,
                                       const std::string& device = "cpu") {
  return training_graph_json(
    {{"name", "moons"}, {"n_samples", 512}}, {{"batch_size", 32}},
    {{{"type", "Linear"}, {"out_features", hidden}},
     {{"type", "ReLU"}},
     {{"type", "Linear"}, {"out_features", 2}}},
    {{"name", "adam"}, {"lr", 0.01}},
    {{"epochs", epochs}, {"max_steps", max_steps}, {"device", device}});
}

inline std::string moons_graph(int epochs, int max_steps = 0, int hidden = 16,
                               const std::string& device = "cpu") {
  return moons_graph_json(epochs, max_steps, hidden, device).dump();
}

} // namespace cdui::test
