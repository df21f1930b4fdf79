#include "actors/policy/card_context.hpp"

#include <nlohmann/json.hpp>

namespace cdui::policy {

std::map<std::string, std::int64_t> measured_contexts(const std::string& final_metrics) {
  std::map<std::string, std::int64_t> out;
  auto metrics = nlohmann::json::parse(final_metrics, nullptr, false);
  if (!metrics.is_object())
    return out;
  for (const auto& [node, values] : metrics.items()) {
    if (!values.is_object())
      continue;
    auto figures = values.find("cuda_context_bytes");
    if (figures == values.end() || !figures->is_object())
      continue;
    for (const auto& [device, bytes] : figures->items())
      if (bytes.is_number_integer() && bytes.get<std::int64_t>() > 0 && bytes.get<std::int64_t>() <= max_context_bytes)
        out[device] = bytes.get<std::int64_t>();
  }
  return out;
}

std::string measured_context_name(const std::string& allowance_name, const std::string& run_id) {
  return allowance_name + ", measured by run " + run_id;
}

} // namespace cdui::policy
