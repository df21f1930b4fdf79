#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cdui::devices {

/// Whether this CPU runs bfloat16 arithmetic in hardware: x86's avx512_bf16 (dot products) or
/// amx_bf16 (tile matrix multiplies). Without either, libtorch computes bf16 through fp32
/// conversions, measured 12-20x slower than fp32 (docs/training-memory.md, "What each device honours").
struct bf16_support {
  /// The instructions it has, and those it lacks, of avx512_bf16 and amx_bf16.
  std::vector<std::string> has;
  std::vector<std::string> lacks;
  [[nodiscard]] bool native() const { return !has.empty(); }
  /// "native (avx512_bf16, amx_bf16)" or "not native (no avx512_bf16 or amx_bf16)".
  [[nodiscard]] std::string text() const;
};

/// From the `flags` lines of /proc/cpuinfo's text (any other text: nothing native).
[[nodiscard]] bf16_support bf16_support_of(std::string_view cpuinfo);

/// This machine's, read from /proc/cpuinfo once.
[[nodiscard]] const bf16_support& cpu_bf16_support();

/// Whether the `flags` lines of /proc/cpuinfo's text name avx512f: oneDNN then runs its AVX-512
/// kernels, whose buffers the static estimate's 16-bit rules were measured on.
[[nodiscard]] bool avx512_of(std::string_view cpuinfo);

/// This machine's, read from /proc/cpuinfo once.
[[nodiscard]] bool cpu_has_avx512();

} // namespace cdui::devices
