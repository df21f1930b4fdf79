#pragma once
// The static memory estimate of a graph's training run (docs/training-memory.md,
// "The static estimate"): named terms that add up to the figure, from the layer shapes alone
// (runtime/layer_shapes.hpp), with no tensor allocated. Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cpu_kernels.hpp"
#include "runtime/optimizer_state.hpp"
#include "runtime/precision.hpp"
#include "runtime/validate.hpp"

namespace cdui::runtime {

/// On CUDA, the libraries' workspaces: 128 MiB for cuBLAS and cuDNN (docs/training-memory.md,
/// "The terms").
inline constexpr std::int64_t cuda_workspace_bytes = std::int64_t{128} << 20;

/// fp32, bf16 or fp16; nullopt for any other word.
[[nodiscard]] std::optional<precision> parse_precision(const std::string& word);

/// 7000000000 as "7,000,000,000".
[[nodiscard]] std::string thousands(std::int64_t n);

/// One term of an estimate: what it is, its bytes, and how it was counted.
struct estimate_term {
  std::string name;    // parameters, buffers, gradients, optimizer_state, autocast_copies, activations,
                       // allocator_reserve, cuda_workspace
  std::int64_t bytes = 0;
  std::string detail;  // "203,530 parameters x 4 bytes"
  bool cuda_only = false;
};

/// The estimate of one TrainingLoop's memory on its device: the terms, and their sum; or, when it
/// had to skip or guess, a rough estimate with the reason and no figure.
struct memory_estimate {
  std::string loop_node;
  std::string device;      // what the figure is for: the loop's device, or the one asked for
  std::string precision;   // what the loop would train in there: fp32, bf16, fp16
  std::int64_t batch_size = 0;       // the training batch counted
  std::int64_t eval_batch_size = 0;  // the validation batch counted (0: no validation)
  std::string activations_from;      // "training step" or "evaluation pass"
  std::int64_t parameters = 0;
  /// The parameters that get a gradient and optimizer state (Model.freeze and lora leave some out).
  std::int64_t trainable_parameters = 0;
  std::vector<estimate_term> terms;
  /// Empty: a figure (total is the sum of the terms). Otherwise why this is a rough estimate.
  std::string rough;
  std::int64_t cards = 1;

  [[nodiscard]] bool is_rough() const { return !rough.empty(); }
  /// The sum of the terms (0 when rough).
  [[nodiscard]] std::int64_t total() const;
  /// The sum of the terms that apply on every device (what the CPU's counting allocator measures).
  [[nodiscard]] std::int64_t total_without_cuda() const;
};

struct estimate_options {
  /// The device to estimate for; empty: the TrainingLoop's `device` param. The CUDA terms apply on
  /// cuda and cuda:N.
  std::string device;
  /// Cards of a device set: the figure is per card (without DDP, each card holds a whole run).
  std::int64_t cards = 1;
  /// The CPU's kernels (device cpu, and sim cards, which compute on the CPU): they set the blocked
  /// layouts counted, and a bf16 run on kernels other than those the 16-bit rules were measured on
  /// (AVX-512 BF16 without AMX) gets a rough estimate (cpu_kernels.hpp). This machine's by default.
  cpu_kernels cpu = this_cpu_kernels();
};

/// Estimates the memory of the graph's TrainingLoop (the largest, when there are several).
/// A graph without a TrainingLoop gets a rough estimate saying so.
[[nodiscard]] memory_estimate estimate_memory(const validated_graph& graph,
                                              const estimate_options& options = {});

/// The estimate as JSON: {"estimate": true, "rough": ..., "terms": [...], "total_bytes": ...}.
[[nodiscard]] nlohmann::json to_json(const memory_estimate& estimate);

/// Terms as the estimates' JSON lists them: name, bytes, human, detail, cuda_only.
[[nodiscard]] nlohmann::json to_json(const std::vector<estimate_term>& terms);

} // namespace cdui::runtime
