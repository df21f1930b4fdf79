#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace cdui {

/// FNV-1a, 64 bits, as 16 hex digits: stable across processes, builds and machines (std::hash is
/// not), enough for a cache key or a digest two processes compare. Not a cryptographic hash.
[[nodiscard]] inline std::string fnv1a_hex(std::string_view text) {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

} // namespace cdui
