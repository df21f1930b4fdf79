#pragma once
// The memory of training a model known only by its parameter count (docs/training-memory.md,
// "From a parameter count"): the weights, their gradients and the optimizer state, counted the
// seeds' way: parameters x bytes per number, with gradients and optimizer state only for the
// trainable share. No activations: they depend on the batch and the layers, which only a graph
// gives (runtime/estimate.hpp). Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/estimate.hpp"
#include "runtime/precision.hpp"

namespace cdui::runtime {

/// The most parameters counted (a quadrillion): keeps every term inside int64.
inline constexpr double max_counted_parameters = 1e15;

/// What to count: a model of `parameters` numbers stored in `weights`, trained by `optimizer`.
struct parameter_request {
  std::int64_t parameters = 0;
  /// The format the weights and their gradients are stored in.
  precision weights = precision::fp32;
  optimizer_kind optimizer = optimizer_kind::adamw;
  /// The share of the parameters trained, in (0, 1]: 1 trains them all; LoRA makes it tiny.
  double trainable = 1.0;
  /// The format of the optimizer's copies: fp32 (adam's 8 bytes) unless given; a model cast to
  /// fp16 whole keeps them in fp16 too (docs/training-memory.md, "From a parameter count").
  /// adam8bit's are always 8-bit.
  precision states = precision::fp32;
};

/// A request the estimator cannot take: the field (the API's name; the flag is --field with '-'
/// for '_') and what was wrong, in words that follow the field's name.
struct request_error {
  std::string field;
  std::string message;  // "must be one of fp32, bf16, fp16, got 'fp8'"
};

/// Reads a request from the API's fields (the command line passes its flags the same way, as
/// strings): parameters (a number, or a string such as "7e9" or "7B"), precision, optimizer,
/// trainable (a number or a string), state_precision. Absent fields keep their defaults; fields
/// it does not know are the caller's to refuse.
[[nodiscard]] std::variant<parameter_request, request_error>
read_parameter_request(const nlohmann::json& fields);

/// The estimate: parameters, gradients and optimizer_state terms, and their sum.
struct parameter_estimate {
  parameter_request request;
  std::int64_t trainable_parameters = 0;
  std::vector<estimate_term> terms;

  [[nodiscard]] std::int64_t total() const;
};

[[nodiscard]] parameter_estimate estimate_from_parameters(const parameter_request& request);

/// As JSON, in the graph estimate's shape: {"estimate": true, "terms": [...], "total_bytes": ...}
/// with the request's fields.
[[nodiscard]] nlohmann::json to_json(const parameter_estimate& estimate);

} // namespace cdui::runtime
