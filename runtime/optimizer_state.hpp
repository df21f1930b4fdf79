#pragma once
// What each optimizer keeps per trainable parameter, and the bytes a number takes in each format:
// the one definition the static estimate (runtime/estimate.hpp) and the parameter estimate
// (runtime/parameter_estimate.hpp) count with. Torch-free.

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/precision.hpp"

namespace cdui::runtime {

/// Bytes one number takes in a format: fp32 4, fp16 and bf16 2 (docs/training-memory.md,
/// "From a parameter count"). The one definition both estimates count with.
[[nodiscard]] constexpr std::int64_t bytes_per_number(precision p) {
  return p == precision::fp32 ? 4 : 2;
}

/// The optimizers whose state the estimates count: the Optimizer node's four (sgd with and without
/// momentum, rmsprop likewise) and adam8bit (docs/training-memory.md, "From a parameter count").
enum class optimizer_kind { sgd, sgd_momentum, adam, adamw, rmsprop, rmsprop_momentum, adam8bit };

/// What an optimizer keeps between steps for each trainable parameter (plain SGD keeps none, SGD
/// with momentum one per parameter, Adam and AdamW two; in bytes: adam and adamw 8, sgd_momentum 4,
/// sgd 0, adam8bit 2; docs/training-memory.md, "From a parameter count"). The one definition both
/// estimates use.
struct optimizer_state {
  std::int64_t copies = 0;  // numbers kept per parameter
  bool eight_bit = false;   // adam8bit: each copy is one byte, whatever the weights' format
  std::string name;         // "AdamW"
  std::string kept;         // "exp_avg and exp_avg_sq"
};

[[nodiscard]] optimizer_state state_of(optimizer_kind kind);
/// The word the estimator takes: adam, adamw, sgd, sgd_momentum, rmsprop, rmsprop_momentum, adam8bit.
[[nodiscard]] const char* to_string(optimizer_kind kind);
/// nullopt for a word that names none.
[[nodiscard]] std::optional<optimizer_kind> parse_optimizer(const std::string& word);
/// "adam, adamw, sgd, ..." for a refusal.
[[nodiscard]] std::string optimizer_words();

/// The optimizer state's bytes per trainable parameter: copies x 4 (fp32 states), copies x the
/// given format's bytes, or copies x 1 byte for adam8bit.
[[nodiscard]] std::int64_t state_bytes_per_parameter(const optimizer_state& state,
                                                     precision states = precision::fp32);

} // namespace cdui::runtime
