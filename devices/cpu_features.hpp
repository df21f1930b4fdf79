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

/// Whether oneDNN's ISA cap (`ONEDNN_MAX_CPU_ISA`, else `DNNL_MAX_CPU_ISA`: SSE41, AVX, AVX2,
/// AVX2_VNNI... or AVX512_..., AMX_..., ALL) lets it run AVX-512 kernels; unset or empty: yes.
[[nodiscard]] bool isa_cap_allows_avx512(std::string_view cap);

/// This machine's, read from /proc/cpuinfo once, under oneDNN's ISA cap of this process's
/// environment: with ONEDNN_MAX_CPU_ISA=AVX2 oneDNN runs its AVX2 kernels on an AVX-512 CPU.
[[nodiscard]] bool cpu_has_avx512();

} // namespace cdui::devices
