#pragma once

#include <string>
#include <vector>

#include "devices/cpu_features.hpp"
#include "devices/device.hpp"

namespace cdui::apps {

/// `cdui devices`: one row per device with its slots, its description and whether it computes in
/// bf16 natively (the CPU and sim cards, which execute on it: by the CPU's instructions; CUDA
/// cards: by their compute capability, devices::cuda_bf16_text). CUDA cards as docs/cli.md ("cdui
/// devices") shows them: a machine with one card lists it once, as `cuda` (its label, ", cuda:0,
/// the only card": cuda and cuda:0 are the same hardware); with several, `cuda` (whichever card
/// torch is currently pointed at) comes first, then each card with its label (the driver's name,
/// UUID and memory: devices/cuda_cards.hpp).
[[nodiscard]] std::string devices_table(const std::vector<devices::offered_device>& offered,
                                        const devices::bf16_support& cpu);

} // namespace cdui::apps
