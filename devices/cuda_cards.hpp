#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "devices/device.hpp"
#include "devices/nvml.hpp"

namespace cdui::devices {

/// The driver's cards that this process's CUDA sees, in CUDA's order. `visible` is
/// CUDA_VISIBLE_DEVICES (null: every card, in the driver's order): indices or UUIDs ("GPU-1a2b..."
/// or a prefix of one that names one card), comma-separated. As CUDA reads it, the list ends at the
/// first entry that names no card or a card already listed.
[[nodiscard]] std::vector<gpu_card> cuda_visible_cards(const std::vector<gpu_card>& cards, const char* visible);

/// The offers of torch's `count` CUDA devices: cuda:i is the visible card whose UUID is
/// `torch_uuids[i]` (the CUDA runtime's; empty when unknown: then the i-th visible card). A card
/// NVML did not describe is offered with its memory unknown (0), `nvml_problem` saying why.
[[nodiscard]] std::vector<offered_device> cuda_offers(int count, const std::vector<std::string>& torch_uuids,
                                                      const std::vector<gpu_card>& visible,
                                                      const std::string& nvml_problem);

/// The compute capability from which a CUDA card computes bf16 natively (Ampere's 8.0); below it,
/// a bf16 run trains in fp32 with a `precision_fallback` warning (runtime/precision.cpp).
inline constexpr int cuda_bf16_major = 8;

/// What `cdui devices` says of a CUDA card's bf16: "native (compute 9.0)", "not native (compute
/// 7.5, below 8.0)", or "-" when the driver did not say (capability 0).
[[nodiscard]] std::string cuda_bf16_text(int compute_major, int compute_minor);

/// "GPU-1a2b3c4d" of "GPU-1a2b3c4d-...": enough to tell a lab's cards apart in a listing.
[[nodiscard]] std::string short_uuid(std::string_view uuid);

/// The UUID text NVML gives a card, from the 16 bytes the CUDA runtime gives it (cudaDeviceProp::uuid).
[[nodiscard]] std::string gpu_uuid_text(const unsigned char* bytes16);

/// Why a host lists no CUDA card though NVML sees some, or why NVML sees none; empty when the CUDA
/// cards are offered, or when there are none and nothing to say.
[[nodiscard]] std::string cuda_note(int torch_count, bool torch_has_cuda, const std::vector<gpu_card>& cards,
                                    const std::string& nvml_problem);

} // namespace cdui::devices
