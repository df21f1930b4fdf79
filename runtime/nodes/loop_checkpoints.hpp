#pragma once

// The checkpoints a TrainingLoop writes while it trains (checkpoint_every, checkpoint_every_steps,
// and the interrupt checkpoint a Stop writes), and continuing from one (run_context::resume_from;
// docs/graph-format.md, "Checkpoints while it trains"). A checkpoint is a CheckpointSaver archive
// (model, optimizer, epoch, loss scale: CheckpointLoader loads it too) with the loop's place in its
// training beside it, so that a resumed run ends with the weights an uninterrupted run with the
// same seed ends with.

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include "runtime/nodes/values.hpp"

namespace cdui::runtime {
class node_call;
}

namespace cdui::runtime::nodes {

/// Where a loop stands in its training: what it reports, and where a resumed run continues.
struct loop_totals {
  std::int64_t steps = 0;
  std::int64_t batches = 0;
  std::int64_t epochs_run = 0;
  bool stopped_at_max_steps = false;
  bool stopped = false;
  double last_train_loss = std::numeric_limits<double>::quiet_NaN();
  double last_val_loss = std::numeric_limits<double>::quiet_NaN();
  double last_val_accuracy = std::numeric_limits<double>::quiet_NaN();
  /// Validation batches run so far: the step of val_loss_step.
  std::int64_t val_batches = 0;
  /// The epoch in progress (1: the loop's first, without a resumed optimizer_state's epochs), its
  /// batches trained, and its loss sum and samples so far (for its train_loss).
  std::int64_t epoch = 1;
  std::int64_t epoch_batch = 0;
  double epoch_loss_sum = 0.0;
  std::int64_t epoch_samples = 0;
};

/// A loop's checkpoint: its place, the run generator's state at the start of the epoch in
/// progress (its shuffled order is drawn again from there) and now, and the optimizer's (its
/// epoch: the whole epochs run, a resumed optimizer_state's included) and the loss scaler's
/// state. The model's weights go beside it.
struct loop_checkpoint {
  std::string node;
  loop_totals at;
  /// Epochs a resumed optimizer_state had run before this loop started.
  std::int64_t epoch_offset = 0;
  at::Tensor epoch_rng;
  at::Tensor rng;
  optimizer_state_value optimizer;
  grad_scaler_state_value scaler;
};

/// Writes `c` with `model`'s weights into the run's checkpoints/ folder as
/// `<node>-step<steps>.pt` (`interrupt`: `<node>-step<steps>-interrupt.pt`), keeps the newest
/// `keep` periodic ones of the node (0: all), and emits a `checkpoint` event. Only where the
/// run's file rules allow it (runtime/file_access.hpp).
void write_loop_checkpoint(node_call& call, torch::nn::Module& model, const loop_checkpoint& c, bool interrupt,
                           std::int64_t keep);

/// The checkpoint of loop `node` that the run resumes from (run_context::resume_from: a
/// checkpoint file, a run's folder or its checkpoints/ folder, where the newest of the node's
/// counts), its weights loaded into `model`; none when the run does not resume or, from a folder,
/// the folder holds none of this node (the loop then trains from its start). Throws node_error
/// for a file that cannot be read or does not fit the model.
[[nodiscard]] std::optional<loop_checkpoint> read_loop_checkpoint(node_call& call, torch::nn::Module& model);

} // namespace cdui::runtime::nodes
