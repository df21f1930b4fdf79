#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace cdui {

/// Where a run is in its life: queued -> running -> one of the four ends.
enum class run_status {
  queued,
  running,
  succeeded,
  failed,
  cancelled,
  interrupted,
};

[[nodiscard]] std::string_view to_string(run_status x);

[[nodiscard]] std::optional<run_status> parse_run_status(std::string_view text);

/// True for the statuses a run never leaves.
[[nodiscard]] constexpr bool is_final(run_status x) {
  return x != run_status::queued && x != run_status::running;
}

inline std::ostream& operator<<(std::ostream& out, run_status x) {
  return out << to_string(x);
}

} // namespace cdui
