#pragma once

#include <cstdint>
#include <string>

namespace cdui::devices {

/// What a card has free now, counting every process on it (as nvidia-smi does): a sim card's
/// shared count, a CUDA card's driver figure (NVML, by its UUID). `total_bytes` when neither says
/// (another kind, no UUID, no driver).
[[nodiscard]] std::int64_t card_free_bytes(const std::string& kind, const std::string& uuid,
                                           std::int64_t total_bytes);

} // namespace cdui::devices
