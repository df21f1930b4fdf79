#include "runtime/parameter_estimate.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "devices/memory.hpp"

namespace cdui::runtime {

namespace {

/// What the field holds, as a refusal quotes it.
std::string quoted(const nlohmann::json& value) {
  return value.is_string() ? "'" + value.get<std::string>() + "'" : value.dump();
}

/// A number from a field that holds one or a string of one, with the string's suffix read by
/// `suffix` (its multiplier; nullopt when the suffix is not one it knows). nullopt: not a number.
template <typename Suffix>
std::optional<double> number_in(const nlohmann::json& value, Suffix suffix) {
  if (value.is_number())
    return value.get<double>();
  if (!value.is_string())
    return std::nullopt;
  auto text = value.get<std::string>();
  double multiplier = 1;
  auto last = text.empty() ? '\0' : text.back();
  if (std::isalpha(static_cast<unsigned char>(last)) != 0 || last == '%') {
    auto m = suffix(last);
    if (!m)
      return std::nullopt;
    multiplier = *m;
    text.pop_back();
  }
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front())) != 0)
    return std::nullopt;
  char* end = nullptr;
  auto n = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(n))
    return std::nullopt;
  return n * multiplier;
}

/// Models are named by count: 125M, 1B, 7B.
std::optional<double> count_suffix(char c) {
  switch (c) {
    case 'k': case 'K': return 1e3;
    case 'm': case 'M': return 1e6;
    case 'b': case 'B': return 1e9;
    case 't': case 'T': return 1e12;
    default: return std::nullopt;
  }
}

/// The share may be written as a percentage: 0.2%.
std::optional<double> share_suffix(char c) {
  return c == '%' ? std::optional<double>{0.01} : std::nullopt;
}

std::variant<std::int64_t, request_error> read_count(const nlohmann::json& value) {
  auto n = number_in(value, count_suffix);
  if (!n)
    return request_error{"parameters", "must be a number of parameters such as 7e9, 7000000000 or "
                                       "7B, got " + quoted(value)};
  if (*n < 1)
    return request_error{"parameters", "must be at least 1, got " + quoted(value)};
  if (*n > max_counted_parameters)
    return request_error{"parameters", "must be at most 1e15 (a quadrillion), got " + quoted(value)};
  if (std::floor(*n) != *n)
    return request_error{"parameters", "must be a whole number of parameters, got " + quoted(value)};
  return static_cast<std::int64_t>(*n);
}

std::variant<double, request_error> read_share(const nlohmann::json& value) {
  auto share = number_in(value, share_suffix);
  if (!share || *share <= 0 || *share > 1)
    return request_error{"trainable", "must be the share of the parameters trained, more than 0 and "
                                      "at most 1 (0.002 or 0.2% for 0.2%), got " + quoted(value)};
  return *share;
}

std::variant<precision, request_error> read_format(const std::string& field, const nlohmann::json& value) {
  auto p = value.is_string() ? parse_precision(value.get<std::string>()) : std::nullopt;
  if (!p)
    return request_error{field, "must be one of fp32, bf16, fp16, got " + quoted(value)};
  return *p;
}

/// "0.2%" for 0.002.
std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", share * 100);
  return buf;
}

} // namespace

std::variant<parameter_request, request_error> read_parameter_request(const nlohmann::json& fields) {
  parameter_request r;
  if (!fields.contains("parameters"))
    return request_error{"parameters", "is required: the model's parameter count, such as 7e9"};
  auto count = read_count(fields["parameters"]);
  if (auto* e = std::get_if<request_error>(&count))
    return *e;
  r.parameters = std::get<std::int64_t>(count);
  if (fields.contains("precision")) {
    auto p = read_format("precision", fields["precision"]);
    if (auto* e = std::get_if<request_error>(&p))
      return *e;
    r.weights = std::get<precision>(p);
  }
  if (fields.contains("optimizer")) {
    const auto& value = fields["optimizer"];
    auto kind = value.is_string() ? parse_optimizer(value.get<std::string>()) : std::nullopt;
    if (!kind)
      return request_error{"optimizer", "must be one of " + optimizer_words() + ", got " + quoted(value)};
    r.optimizer = *kind;
  }
  if (fields.contains("trainable")) {
    auto share = read_share(fields["trainable"]);
    if (auto* e = std::get_if<request_error>(&share))
      return *e;
    r.trainable = std::get<double>(share);
  }
  if (fields.contains("state_precision")) {
    if (state_of(r.optimizer).eight_bit)
      return request_error{"state_precision", std::string{"does not apply to "} + to_string(r.optimizer)
                                                + ", whose states are 8-bit numbers"};
    auto p = read_format("state_precision", fields["state_precision"]);
    if (auto* e = std::get_if<request_error>(&p))
      return *e;
    r.states = std::get<precision>(p);
  }
  return r;
}

std::int64_t parameter_estimate::total() const {
  std::int64_t sum = 0;
  for (const auto& t : terms)
    sum += t.bytes;
  return sum;
}

parameter_estimate estimate_from_parameters(const parameter_request& r) {
  parameter_estimate e;
  e.request = r;
  e.trainable_parameters = std::llround(static_cast<double>(r.parameters) * r.trainable);
  auto n = bytes_per_number(r.weights);
  auto format = std::string{to_string(r.weights)};
  auto state = state_of(r.optimizer);
  auto per_state = state_bytes_per_parameter(state, r.states);
  auto trained = thousands(e.trainable_parameters)
                 + (r.trainable < 1 ? " trainable parameters (" + percent(r.trainable) + ")"
                                    : " trainable parameters");
  auto copies = state.copies == 0
                  ? std::string{}
                  : ", " + std::to_string(state.copies) + " x "
                      + (state.eight_bit ? std::string{"1 byte"}
                                         : std::to_string(bytes_per_number(r.states)) + " bytes in "
                                             + to_string(r.states));
  e.terms = {
    {"parameters", r.parameters * n,
     thousands(r.parameters) + " parameters x " + std::to_string(n) + " bytes (" + format + ")"},
    {"gradients", e.trainable_parameters * n,
     trained + " x " + std::to_string(n) + " bytes (" + format + ")"},
    {"optimizer_state", e.trainable_parameters * per_state,
     thousands(e.trainable_parameters) + " x " + std::to_string(per_state) + " bytes (" + state.name
       + ": " + state.kept + copies + ")"},
  };
  return e;
}

nlohmann::json to_json(const parameter_estimate& e) {
  const auto& r = e.request;
  return {{"estimate", true},
          {"memory_source", "estimate"},
          {"rough", nullptr},
          {"parameters", r.parameters},
          {"precision", to_string(r.weights)},
          {"optimizer", to_string(r.optimizer)},
          {"state_precision", state_of(r.optimizer).eight_bit ? "8-bit" : to_string(r.states)},
          {"trainable", r.trainable},
          {"trainable_parameters", e.trainable_parameters},
          {"activations", "not counted: they depend on the batch and the layers; estimate a graph "
                          "for them"},
          {"terms", to_json(e.terms)},
          {"total_bytes", e.total()},
          {"total", devices::format_bytes(e.total())}};
}

} // namespace cdui::runtime
