#include "actors/policy/card_context.hpp"

#include <nlohmann/json.hpp>

#include "devices/nvml.hpp"
#include "messages/slot_key.hpp"

namespace cdui::policy {

namespace {

/// `bytes` when it is a context's figure.
std::optional<std::int64_t> context_bytes(const nlohmann::json& bytes) {
  if (!bytes.is_number_integer())
    return std::nullopt;
  auto n = bytes.get<std::int64_t>();
  if (n < devices::min_cuda_context_bytes || n > max_context_bytes)
    return std::nullopt;
  return n;
}

} // namespace

std::map<std::string, context_figures> measured_contexts(const std::string& final_metrics) {
  std::map<std::string, context_figures> out;
  auto metrics = nlohmann::json::parse(final_metrics, nullptr, false);
  if (!metrics.is_object())
    return out;
  for (const auto& [node, values] : metrics.items()) {
    if (!values.is_object())
      continue;
    for (auto [name, field] : {std::pair{"cuda_context_bytes", &context_figures::held},
                               std::pair{"cuda_context_created_bytes", &context_figures::created}}) {
      auto figures = values.find(name);
      if (figures == values.end() || !figures->is_object())
        continue;
      for (const auto& [device, bytes] : figures->items())
        if (auto n = context_bytes(bytes)) {
          auto& kept = out[device].*field;
          if (!kept || *kept < *n)
            kept = n;
        }
    }
  }
  return out;
}

std::optional<std::string> key_of_run_device(const std::vector<std::string>& keys, const std::string& device) {
  if (keys.empty())
    return std::nullopt;
  auto first = slot_key::parse(keys.front());
  for (const auto& k : keys)
    if (slot_key::parse(k).offerer != first.offerer)
      return std::nullopt;
  if (first.local()) {
    for (const auto& k : keys)
      if (k == device)
        return k;
    return std::nullopt;
  }
  // On a worker: "kind:k" is the run's k-th card.
  auto colon = device.find(':');
  if (colon == std::string::npos || colon + 1 == device.size() || device.size() - colon > 7)
    return std::nullopt;
  std::size_t k = 0;
  for (auto i = colon + 1; i < device.size(); ++i) {
    if (device[i] < '0' || device[i] > '9')
      return std::nullopt;
    k = k * 10 + static_cast<std::size_t>(device[i] - '0');
  }
  if (k >= keys.size() || slot_key::parse(keys[k]).device.compare(0, colon + 1, device, 0, colon + 1) != 0)
    return std::nullopt;
  return keys[k];
}

bool take_in(card_context& card, const context_figures& figures, const std::string& run_id) {
  bool changed = false;
  if (figures.held && *figures.held > card.held) {
    card.held = *figures.held;
    card.held_run = run_id;
    changed = true;
  }
  if (figures.created && *figures.created > card.created) {
    card.created = *figures.created;
    card.created_run = run_id;
    changed = true;
  }
  return changed;
}

counted_context context_to_count(const card_context& card, std::int64_t allowance, const std::string& allowance_name) {
  if (card.held > 0)
    return {card.held, allowance_name + ", measured by run " + card.held_run};
  return {allowance, allowance_name};
}

} // namespace cdui::policy
