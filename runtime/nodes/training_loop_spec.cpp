// The TrainingLoop node spec: params, ports and checks, torch-free (runtime/nodes/training_loop.cpp runs it).
#include <cmath>

#include "runtime/nodes/builtin.hpp"

namespace cdui::runtime::nodes {

namespace {

std::vector<graph_error> check_training_loop(const graph_node& node) {
  const auto& scale = node.params["loss_scale"];
  bool ok = scale.is_string() ? (scale == "auto" || scale == "dynamic" || scale == "off")
                              : (scale.get<double>() > 0 && std::isfinite(scale.get<double>()));
  if (ok)
    return {};
  return {{node.id, "loss_scale", "node '" + node.id + "' (TrainingLoop): param 'loss_scale' must "
                                  "be auto, dynamic, off or a number > 0, got " + scale.dump()}};
}

} // namespace

void register_training_loop_node(node_registry& registry) {
  node_spec spec;
  spec.type = "TrainingLoop";
  spec.help = "Trains the model; validates after every epoch when val_dataloader is connected.";
  spec.params = {
    {"epochs", param_kind::integer, 1, 1, 1'000'000, {}, ""},
    {"max_steps", param_kind::integer, 0, 0, INFINITY, {}, "stop after this many optimizer steps (0: none)"},
    {"grad_clip_norm", param_kind::number, 0.0, 0, INFINITY, {}, "clip the gradient norm (0: off)"},
    {"device", param_kind::string, "cpu", -INFINITY, INFINITY, {}, "cpu, auto, cuda, cuda:N, mps, sim:N"},
    {"num_threads", param_kind::integer, 0, 0, 1024, {}, "intra-op threads (0: the cores of the run's slot, one for a small model)"},
    {"strategy", param_kind::string, "single", -INFINITY, INFINITY, {"single", "ddp"},
     "single: one process on the loop's device; ddp: one model across the cards of a worker run's "
     "device set, a process per card"},
    {"accumulate_steps", param_kind::integer, 1, 1, 1'000'000, {},
     "micro-batches per optimizer step, each loss divided by N (effective batch = batch_size x N)"},
    {"precision", param_kind::choice, "fp32", -INFINITY, INFINITY, {"fp32", "bf16", "fp16"},
     "fp32, bf16 or fp16: the forward pass and loss under autocast (falls back to fp32 with a warning where the device cannot)"},
    {"loss_scale", param_kind::scalar, "auto", -INFINITY, INFINITY, {},
     "auto (dynamic for fp16, else off), dynamic, off, or a fixed scale"},
    {"progress_interval_ms", param_kind::integer, 100, 0, 60'000, {},
     "at most one progress event per interval, besides each epoch's first and last batch (0: every batch)"},
    {"checkpoint_every", param_kind::integer, 0, 0, 1'000'000, {},
     "write a checkpoint into the run's checkpoints/ after every N whole epochs (0: off)"},
    {"checkpoint_every_steps", param_kind::integer, 0, 0, INFINITY, {},
     "write a checkpoint after every N optimizer steps (0: off)"},
    {"keep_checkpoints", param_kind::integer, 3, 0, 1'000'000, {},
     "the newest periodic checkpoints kept (0: all); a Stop's interrupt checkpoint is kept beside them"},
    {"train_loss_batch_every", param_kind::integer, 1, 0, 1'000'000, {},
     "the metric train_loss_batch at every Nth optimizer step: the mean loss of those steps' batches (0: off)"},
  };
  spec.inputs = {
    {"model", port_type::model, true, ""},
    {"dataloader", port_type::dataloader, true, "training batches"},
    {"loss_fn", port_type::loss_fn, true, ""},
    {"optimizer", port_type::optimizer, true, ""},
    {"val_dataloader", port_type::dataloader, false, "validation after every epoch"},
    {"scheduler", port_type::scheduler, false, ""},
    {"optimizer_state", port_type::optimizer_state, false, "resume: the optimizer's state and epoch"},
    {"grad_scaler_state", port_type::grad_scaler_state, false, "resume: the loss scale"},
  };
  spec.outputs = {
    {"model", port_type::model, true, "the trained model"},
    {"metrics", port_type::metrics, true, ""},
    {"optimizer_state", port_type::optimizer_state, true, "for CheckpointSaver"},
    {"grad_scaler_state", port_type::grad_scaler_state, true, "for CheckpointSaver"},
  };
  spec.check = check_training_loop;
  registry.add(std::move(spec));
}

} // namespace cdui::runtime::nodes
