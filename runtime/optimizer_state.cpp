#include "runtime/optimizer_state.hpp"

namespace cdui::runtime {

namespace {

/// The optimizers the estimator takes, in the order a refusal lists them.
constexpr optimizer_kind all_optimizers[] = {
  optimizer_kind::adam,    optimizer_kind::adamw,   optimizer_kind::sgd,
  optimizer_kind::sgd_momentum, optimizer_kind::rmsprop, optimizer_kind::rmsprop_momentum,
  optimizer_kind::adam8bit};

} // namespace

optimizer_state state_of(optimizer_kind kind) {
  switch (kind) {
    case optimizer_kind::sgd: return {0, false, "plain SGD", "no state"};
    case optimizer_kind::sgd_momentum: return {1, false, "SGD with momentum", "momentum_buffer"};
    case optimizer_kind::adam: return {2, false, "Adam", "exp_avg and exp_avg_sq"};
    case optimizer_kind::adamw: return {2, false, "AdamW", "exp_avg and exp_avg_sq"};
    case optimizer_kind::rmsprop: return {1, false, "RMSprop", "square_avg"};
    case optimizer_kind::rmsprop_momentum:
      return {2, false, "RMSprop with momentum", "square_avg and momentum_buffer"};
    case optimizer_kind::adam8bit: return {2, true, "8-bit Adam", "exp_avg and exp_avg_sq in 8 bits"};
  }
  return {};
}

const char* to_string(optimizer_kind kind) {
  switch (kind) {
    case optimizer_kind::sgd: return "sgd";
    case optimizer_kind::sgd_momentum: return "sgd_momentum";
    case optimizer_kind::adam: return "adam";
    case optimizer_kind::adamw: return "adamw";
    case optimizer_kind::rmsprop: return "rmsprop";
    case optimizer_kind::rmsprop_momentum: return "rmsprop_momentum";
    case optimizer_kind::adam8bit: return "adam8bit";
  }
  return "adamw";
}

std::optional<optimizer_kind> parse_optimizer(const std::string& word) {
  for (auto kind : all_optimizers)
    if (word == to_string(kind))
      return kind;
  return std::nullopt;
}

std::string optimizer_words() {
  std::string words;
  for (auto kind : all_optimizers)
    words += (words.empty() ? "" : ", ") + std::string{to_string(kind)};
  return words;
}

std::int64_t state_bytes_per_parameter(const optimizer_state& state, precision states) {
  return state.copies * (state.eight_bit ? 1 : bytes_per_number(states));
}

} // namespace cdui::runtime
