#pragma once

#include <chrono>
#include <cstdint>

namespace cdui {

/// Milliseconds since the Unix epoch, as every time in the messages is written. Policy code takes
/// times as arguments instead of reading a clock; this is for the actors and commands around it.
inline std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

} // namespace cdui
