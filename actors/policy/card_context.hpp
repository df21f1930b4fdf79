#pragma once
// The CUDA context a run on a card shared by memory counts besides its budget (docs/gpu.md, "The
// CUDA context"): measured by the runs on the card, else the server's allowance.

#include <cstdint>
#include <map>
#include <string>

namespace cdui::policy {

/// More than this is no context's figure (a misread): left out.
inline constexpr std::int64_t max_context_bytes = std::int64_t{16} << 30;

/// The CUDA context a run measured on each of its cards, by device name ("cuda:0"), from its final
/// metrics as the store keeps them: a JSON object of nodes, a TrainingLoop's with
/// "cuda_context_bytes": {device: bytes}. A figure that is not a whole number in (0,
/// max_context_bytes] is left out; text that is not such JSON gives none.
[[nodiscard]] std::map<std::string, std::int64_t> measured_contexts(const std::string& final_metrics);

/// "CUDA context, measured by run a1b2c3d4": how a wait reason names a measured context.
[[nodiscard]] std::string measured_context_name(const std::string& allowance_name, const std::string& run_id);

} // namespace cdui::policy
