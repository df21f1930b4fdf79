#pragma once
// A DDP rank's settings from its run's run.json, as the agent wrote it (docs/ddp.md): within one
// worker the ranks meet at a FileStore in the run's folder, across workers at rank 0's TCPStore.
// Torch-free: `cdui exec` calls it before it builds anything.

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/engine.hpp"

namespace cdui::apps {

/// What the environment gives a rank: the run's secret (CDUI_DDP_SECRET) and the collectives'
/// timeout in seconds (CODEFYUI_DDP_TIMEOUT_S); null when unset.
struct ddp_environment {
  const char* secret = nullptr;
  const char* timeout_s = nullptr;
};

/// Fills `out` for rank `rank` of `world` from `run` (run.json of `run_dir`). Within one worker the
/// rank trains on visible_devices[rank]. Across workers run.json has
///   "ddp": {"store": {"host": H, "port": P}, "first_rank": F, "devices": [every rank's card]}
/// and the rank trains on visible_devices[rank - F], this worker's cards. Returns the error,
/// naming the field, when run.json or the environment does not make a rank.
[[nodiscard]] std::optional<std::string> ddp_settings(const nlohmann::json& run, const std::filesystem::path& run_dir,
                                                      int rank, int world, const ddp_environment& env,
                                                      runtime::ddp_rank& out);

} // namespace cdui::apps
