#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace cdui::test {

/// A moons MLP graph (Dataset -> DataLoader -> Model -> TrainingLoop) as a JSON object. `epochs`
/// large makes a run that lasts until it is cancelled; `device` pins the loop's device.
inline nlohmann::json moons_graph_json(int epochs, int max_steps = 0, int hidden = 16,
                                       const std::string& device = "cpu") {
  return {
    {"nodes",
     {{{"id", "data"}, {"type", "Dataset"}, {"params", {{"name", "moons"}, {"n_samples", 512}}}},
      {{"id", "loader"}, {"type", "DataLoader"}, {"params", {{"batch_size", 32}}}},
      {{"id", "model"},
       {"type", "Model"},
       {"params",
        {{"layers",
          {{{"type", "Linear"}, {"out_features", hidden}},
           {{"type", "ReLU"}},
           {{"type", "Linear"}, {"out_features", 2}}}}}}},
      {{"id", "loss"}, {"type", "Loss"}},
      {{"id", "opt"}, {"type", "Optimizer"}, {"params", {{"name", "adam"}, {"lr", 0.01}}}},
      {{"id", "loop"},
       {"type", "TrainingLoop"},
       {"params", {{"epochs", epochs}, {"max_steps", max_steps}, {"device", device}}}}}},
    {"edges",
     {{{"from", "data.dataset"}, {"to", "loader.dataset"}},
      {{"from", "data.dataset"}, {"to", "model.dataset"}},
      {{"from", "model.model"}, {"to", "loop.model"}},
      {{"from", "loader.dataloader"}, {"to", "loop.dataloader"}},
      {{"from", "loss.loss_fn"}, {"to", "loop.loss_fn"}},
      {{"from", "opt.optimizer"}, {"to", "loop.optimizer"}}}}};
}

inline std::string moons_graph(int epochs, int max_steps = 0, int hidden = 16,
                               const std::string& device = "cpu") {
  return moons_graph_json(epochs, max_steps, hidden, device).dump();
}

} // namespace cdui::test
