#pragma once

#include <cstdint>

namespace cdui::actors {

/// A warning that bad input can repeat (a refused frame, a refused hello) is logged in full this
/// many times, then once every `repeated_warning_every` times with its count, so that a flood of
/// bad input cannot fill the disk with server.log.
inline constexpr std::uint64_t repeated_warnings_in_full = 10;
inline constexpr std::uint64_t repeated_warning_every = 1000;

/// Whether the n-th (from 1) occurrence of a repeated warning is logged.
[[nodiscard]] constexpr bool worth_logging(std::uint64_t n) {
  return n <= repeated_warnings_in_full || n % repeated_warning_every == 0;
}

} // namespace cdui::actors
