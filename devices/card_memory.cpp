#include "devices/card_memory.hpp"

#include "devices/nvml.hpp"
#include "devices/sim_card_registry.hpp"

namespace cdui::devices {

std::int64_t card_free_bytes(const std::string& kind, const std::string& uuid, std::int64_t total_bytes) {
  if (kind == "sim")
    return sim_card_free_bytes(uuid, total_bytes);
  if (kind == "cuda" && !uuid.empty()) {
    auto library = nvml::shared();
    if (auto* opened = std::get_if<std::shared_ptr<nvml>>(&library))
      if (auto memory = (*opened)->memory(uuid))
        return memory->free_bytes;
  }
  return total_bytes;
}

} // namespace cdui::devices
