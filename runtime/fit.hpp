#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/validate.hpp"

namespace cdui::runtime {

/// Optimizer steps each probe of `cdui fit` trains at least. A run's peak is reached from its
/// second step on: from then on every step runs with the optimizer's state (Adam's exp_avg and
/// exp_avg_sq) and the previous step's gradients (zeroed in place, not freed) held. A probe whose
/// second step is an epoch's short last window trains one more, the next epoch's first. Measured:
/// the peak of steps 3 to 6 equals that of step 2 (docs/training-memory.md#cdui-fit).
inline constexpr std::int64_t fit_steady_state_steps = 2;

/// One probe of `cdui fit`: a batch size (with accumulate_steps) and the peak of real training
/// steps at it, the steady state included.
struct fit_probe {
  std::int64_t batch_size = 0;
  /// 1 for the search; the suggestion's accumulate_steps when the suggestion is checked.
  std::int64_t accumulate_steps = 1;
  bool fits = false;
  std::int64_t peak_bytes = 0;  // 0 when it did not fit
  /// Training samples per second after the warm-up (fit_throughput only; 0 otherwise).
  double samples_per_s = 0;
};

/// What `cdui fit` found: every probe in the order run, the largest batch that fits, and the
/// batch_size x accumulate_steps that keeps the graph's effective batch under the memory.
struct fit_report {
  std::string loop_node;
  std::string loader_node;
  std::int64_t memory_bytes = 0;
  std::int64_t intended_effective_batch = 0;
  std::vector<fit_probe> probes;
  std::int64_t largest_batch = 0;  // 0: not even batch 1 fits
  std::int64_t suggested_batch = 0;
  std::int64_t suggested_accumulate = 0;
  /// The measured peak of the suggestion itself, at its batch_size and accumulate_steps.
  std::int64_t suggested_peak_bytes = 0;
  /// False when the effective batch has no divisor that fits, so the suggestion only comes close.
  bool exact = true;
};

/// Finds the largest batch_size of the DataLoader feeding the graph's TrainingLoop whose training
/// fits under `memory_bytes`, by doubling then bisecting on real training (into the steady state:
/// see fit_steady_state_steps) on a simulated card of that size (the counting allocator's cap),
/// then trains the suggested batch_size x accumulate_steps the same way: the suggestion is one
/// that trained. Opt-in and explicit: it changes nothing in the graph. Throws
/// std::invalid_argument when the graph has no TrainingLoop fed by a DataLoader. `on_probe` is
/// called after each probe (for progress output).
[[nodiscard]] fit_report fit_batch_size(const validated_graph& graph, std::int64_t memory_bytes,
                                        const std::function<void(const fit_probe&)>& on_probe = {});

/// The effective batch (batch_size x accumulate_steps) of the DataLoader and TrainingLoop a fit
/// works on; throws std::invalid_argument as fit_batch_size does.
[[nodiscard]] std::int64_t fit_effective_batch(const validated_graph& graph);

/// Warm-up optimizer steps before `fit --throughput` starts its clock: the first steps of any
/// timing include one-off costs (docs/cli.md, "cdui fit").
inline constexpr std::int64_t throughput_warmup_steps = 3;

/// `cdui fit --throughput`: at each batch size given (with one batch per step), trains
/// throughput_warmup_steps steps, then as many as fit in `seconds`, on the same simulated card of
/// `memory_bytes`, and measures training samples per second (validation passes excluded) and the
/// peak. A batch size that runs out of memory is reported so, not measured.
[[nodiscard]] std::vector<fit_probe> fit_throughput(const validated_graph& graph, std::int64_t memory_bytes,
                                                    const std::vector<std::int64_t>& batch_sizes,
                                                    double seconds = 1.0,
                                                    const std::function<void(const fit_probe&)>& on_probe = {});

/// What `cdui fit --ladder` went down: the recovery ladder (docs/cli.md, "cdui fit").
struct fit_ladder_report {
  std::string loop_node;
  std::string loader_node;
  std::int64_t intended_effective_batch = 0;
  /// Each rung in order: the graph's batch size first, then halved on each out-of-memory error,
  /// with the accumulate_steps that keeps the effective batch (or, for a batch that does not divide
  /// it, the fewest that reach it).
  std::vector<fit_probe> rungs;
  /// Whether the last rung trained (false: not even batch 1 did).
  bool trained = false;
};

/// The recovery ladder: tries the graph's batch size on a simulated card of `memory_bytes`;
/// on an out-of-memory error halves it (raising accumulate_steps to keep the effective batch) and
/// tries again, until a rung trains or batch 1 did not.
[[nodiscard]] fit_ladder_report fit_ladder(const validated_graph& graph, std::int64_t memory_bytes,
                                           const std::function<void(const fit_probe&)>& on_rung = {});

} // namespace cdui::runtime
