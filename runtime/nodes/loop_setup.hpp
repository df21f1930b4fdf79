#pragma once

// A TrainingLoop's inputs and its setup, read once before it trains (runtime/nodes/training_loop.cpp
// drives the epochs; loop_report.cpp says what the loop did).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <torch/optim/optimizer.h>

#include "runtime/memory_meter.hpp"
#include "runtime/nodes/amp.hpp"
#include "runtime/nodes/loop_checkpoints.hpp"
#include "runtime/nodes/values.hpp"
#include "runtime/precision.hpp"

namespace cdui::devices {
class memory_scope;
}

namespace cdui::runtime {
class node_call;
}

namespace cdui::runtime::nodes {

/// What the loop reads from its inputs.
struct loop_inputs {
  std::shared_ptr<model_value> model;
  std::shared_ptr<loader_value> loader;
  std::shared_ptr<loss_value> loss;
  std::shared_ptr<optimizer_value> opt_spec;
  std::shared_ptr<loader_value> val_loader;  // none: no validation
  std::shared_ptr<scheduler_value> scheduler;

  explicit loop_inputs(node_call& call);
};

/// The loop's settings and what it trains with, set up once.
struct loop_setup {
  std::string device_name;
  c10::Device device{c10::kCPU};
  /// The card's memory scope when the device executes on the host (cpu, sim); else none.
  devices::memory_scope* scope = nullptr;
  /// What the run holds on its card: its scope's figures, or the CUDA caching allocator's; none
  /// elsewhere.
  std::unique_ptr<memory_meter> meter;
  /// With a meter: the most bytes a forward pass (and the loss) kept for the backward pass.
  std::int64_t activation_bytes = 0;
  std::int64_t epochs = 1;
  std::int64_t max_steps = 0;
  double clip = 0.0;
  std::int64_t accumulate = 1;
  std::string requested_precision;
  precision_choice choice;
  std::optional<grad_scaler> scaler;
  std::vector<at::Tensor> parameters;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  /// The epochs a resumed optimizer state had run already.
  std::int64_t epoch_offset = 0;
  std::int64_t batches_per_epoch = 0;
};

/// Below this many multiply-adds in a batch's forward pass a loop's ops are too small to share
/// among intra-op threads: moons' MLP (37 thousand) ran 1.3 times slower on two threads than on
/// one, the Fashion-MNIST MLP (13 million) as fast, its CNN (67 million) 1.3 times faster
/// (docs/benchmarks.md, "Intra-op threads").
inline constexpr std::int64_t threaded_batch_macs = std::int64_t{16} << 20;

/// The intra-op threads of a loop whose `num_threads` is 0: the run's, or one for a batch of fewer
/// than threaded_batch_macs multiply-adds.
[[nodiscard]] constexpr std::int64_t default_loop_threads(std::int64_t run_threads, std::int64_t batch_macs) {
  return batch_macs < threaded_batch_macs ? 1 : run_threads;
}

/// The optimizer's state as bytes, and back (throws c10::Error when they do not fit it).
[[nodiscard]] std::string save_optimizer(torch::optim::Optimizer& optimizer);
void load_optimizer(torch::optim::Optimizer& optimizer, const std::string& bytes);

/// One optimizer step over the accumulated window: unscale (once), clip over the whole accumulated
/// gradient, step (or skip on an overflow), clear the gradients.
void step_window(torch::optim::Optimizer& optimizer, std::optional<grad_scaler>& scaler,
                 const std::vector<at::Tensor>& parameters, double clip);

/// Reads the params, resolves the precision and the scaler, moves the model to the card and builds
/// the optimizer (restoring a resumed state).
[[nodiscard]] loop_setup set_up(node_call& call, loop_inputs& in, const std::string& device_name,
                                devices::memory_scope* scope);

/// The training batches of an epoch over `samples` (this process's part of the dataset): the
/// loader's, less a last batch of one sample when a BatchNorm layer cannot train on it (its
/// statistics need more than one value per channel): the loop skips that batch, as drop_last would,
/// with a run_warning (kind batch_skipped). Throws node_error when every batch holds one sample.
[[nodiscard]] std::int64_t training_batches(node_call& call, const loop_inputs& in, std::int64_t samples);

/// Continues from a checkpoint: the optimizer's and the loss scaler's state, and the epochs a
/// resumed optimizer_state had run.
void restore(loop_setup& s, loop_inputs& in, const loop_checkpoint& c);

} // namespace cdui::runtime::nodes
