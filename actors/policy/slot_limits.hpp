#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cdui::policy {

/// The environment variable that changes slot limits, e.g. "cuda:0=2,cpu=8".
inline constexpr const char* slot_limits_env = "CODEFYUI_RUN_QUEUE_MAX_CONCURRENT";

/// Slot limits read from the environment, and a sentence for each entry that was skipped.
struct slot_limit_overrides {
  std::map<std::string, int> limits;
  std::vector<std::string> warnings;
};

/// Parses "key=N,key=N". Each entry is split on its last '=', trimmed and lower-cased; `cuda`
/// becomes cuda:<current_cuda>, `mps` mps:0 and `sim` sim:0. A key worker/device keeps the
/// worker's name as written (`gpu-box/sim` is gpu-box/sim:0; a worker's bare `cuda` is its cuda:0). An entry without '=', with an empty
/// key, a value that is not an integer or one below 1 is skipped with a warning, never fatal.
[[nodiscard]] slot_limit_overrides parse_slot_limits(std::string_view text, int current_cuda = 0);

} // namespace cdui::policy
