// The ModelSaver, CheckpointSaver, CheckpointLoader node specs: params, ports and checks, torch-free (runtime/nodes/checkpoints.cpp runs them).
#include <cmath>

#include "runtime/file_access.hpp"
#include "runtime/nodes/builtin.hpp"

namespace cdui::runtime::nodes {

namespace {

/// What validation can refuse before the run: an empty path, or a relative one that climbs out of
/// the run's checkpoints/ folder. Where the rest may lie depends on the machine that runs it.
node_check path_check(file_use use) {
  return [use](const graph_node& node) -> std::vector<graph_error> {
    auto refusal = refusal_by_text(use, "path", node.params["path"].get<std::string>());
    if (refusal.empty())
      return {};
    return {{node.id, "path", "node '" + node.id + "' (" + node.type + "): " + refusal}};
  };
}

param_spec path_param(const char* fallback) {
  return {"path", param_kind::string, fallback, -INFINITY, INFINITY, {},
          "the file; a relative path is inside the run's checkpoints/ folder, an absolute one must be "
          "under a folder of CODEFYUI_OUTPUT_ROOTS"};
}

} // namespace

void register_checkpoint_nodes(node_registry& registry) {
  node_spec saver;
  saver.type = "ModelSaver";
  saver.help = "Saves the model's weights.";
  saver.params = {path_param("model.pt"),
                  {"merge_lora", param_kind::boolean, false, -INFINITY, INFINITY, {},
                   "write each LoRA layer as the plain Linear it equals (W + alpha/rank B A), a file a "
                   "Model without lora loads; false: the base weights and the adapters"}};
  saver.inputs = {{"model", port_type::model, true, ""}};
  saver.check = path_check(file_use::output);
  registry.add(std::move(saver));

  node_spec ckpt;
  ckpt.type = "CheckpointSaver";
  ckpt.help = "Saves the model, the optimizer's state and the epoch, to resume training later.";
  ckpt.params = {path_param("checkpoint.pt")};
  ckpt.inputs = {{"model", port_type::model, true, ""},
                 {"optimizer_state", port_type::optimizer_state, false, "from TrainingLoop"},
                 {"grad_scaler_state", port_type::grad_scaler_state, false,
                  "from TrainingLoop: the loss scale, for fp16 runs"}};
  ckpt.check = path_check(file_use::output);
  registry.add(std::move(ckpt));

  node_spec loader;
  loader.type = "CheckpointLoader";
  loader.help = "Loads a CheckpointSaver checkpoint into a model of the same architecture.";
  loader.params = {{"path", param_kind::string, nlohmann::json{}, -INFINITY, INFINITY, {},
                    "the checkpoint; a relative path is inside the run's checkpoints/ folder"}};
  loader.inputs = {{"model", port_type::model, true, "the architecture to load into"}};
  loader.outputs = {{"model", port_type::model, true, ""},
                    {"optimizer_state", port_type::optimizer_state, true, "for TrainingLoop"},
                    {"grad_scaler_state", port_type::grad_scaler_state, true, "for TrainingLoop"}};
  loader.check = path_check(file_use::checkpoint);
  registry.add(std::move(loader));
}

} // namespace cdui::runtime::nodes
