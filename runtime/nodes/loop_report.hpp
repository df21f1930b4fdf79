#pragma once

// What a TrainingLoop says of its training: node_config before it trains, the validation metrics
// after each epoch, the final metrics and its outputs at the end.

#include <cstdint>

#include <nlohmann/json.hpp>

#include "runtime/nodes/distribution.hpp"
#include "runtime/nodes/loop_setup.hpp"

namespace cdui::runtime::nodes {

/// The epochs' batches for this process's part of the data, and node_config.
void announce(node_call& call, loop_inputs& in, loop_setup& s, const distribution& dist);

/// Validation after an epoch: val_loss (and val_accuracy) over every process's part, each sample
/// once, and val_loss_step, each validation batch's loss over the processes.
void validate(node_call& call, loop_inputs& in, loop_setup& s, distribution& dist, std::int64_t epoch,
              loop_totals& totals);

/// The final metrics and the loop's outputs: the trained model, its metrics, the optimizer's and
/// the scaler's state to resume from.
[[nodiscard]] port_values report(node_call& call, loop_inputs& in, loop_setup& s, distribution& dist,
                                 const loop_totals& totals);

} // namespace cdui::runtime::nodes
