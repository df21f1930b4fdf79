#pragma once
// The CUDA context a run on a card shared by memory counts besides its budget (docs/gpu.md, "The
// CUDA context"): the allowance until runs on the card have measured it, then the largest figure
// they measured. Plain data, no actor or store.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cdui::policy {

/// More than this is no context's figure (a misreading): left out, as less than
/// devices::min_cuda_context_bytes is.
inline constexpr std::int64_t max_context_bytes = std::int64_t{16} << 30;

/// What a run measured of its CUDA context on one card: what its process held besides the caching
/// allocator (the context, its kernels, the libraries: the whole cost), and what the card lost when
/// the context was created (the bare context, kept to be shown: the card's figure around it also
/// counts what other processes took meanwhile, so it is not counted).
struct context_figures {
  std::optional<std::int64_t> held;
  std::optional<std::int64_t> created;
};

/// Each card's figures in a run's final metrics as the store keeps them (a JSON object of nodes, a
/// TrainingLoop's with "cuda_context_bytes" and "cuda_context_created_bytes": {device: bytes}), by
/// the device name the run used; the largest of each where several loops give one. A figure that
/// is not a whole number from devices::min_cuda_context_bytes to max_context_bytes is left out;
/// text that is not such JSON gives none.
[[nodiscard]] std::map<std::string, context_figures> measured_contexts(const std::string& final_metrics);

/// The slot key a device name of a run's metrics stands for, from the run's keys in order: on this
/// server the key of that device; on one worker, which numbers a run's cards from 0 in the order of
/// its keys, the k-th key for "kind:k". None when no key matches, or for a set across workers
/// (each numbers its own cards from 0).
[[nodiscard]] std::optional<std::string> key_of_run_device(const std::vector<std::string>& keys,
                                                           const std::string& device);

/// What the runs on a card measured: the largest whole figure and the largest bare context, each
/// with the run that measured it (0 bytes: none yet).
struct card_context {
  std::int64_t held = 0;
  std::string held_run;
  std::int64_t created = 0;
  std::string created_run;
};

/// Takes in run `run_id`'s figures for the card; whether anything changed.
bool take_in(card_context& card, const context_figures& figures, const std::string& run_id);

/// What each run on the card counts besides its budget, and what texts call it: the largest whole
/// figure a run measured ("CUDA context, measured by run a1b2c3d4"), else the allowance
/// (`allowance`, called `allowance_name`).
struct counted_context {
  std::int64_t bytes = 0;
  std::string name;
};
[[nodiscard]] counted_context context_to_count(const card_context& card, std::int64_t allowance,
                                               const std::string& allowance_name);

} // namespace cdui::policy
