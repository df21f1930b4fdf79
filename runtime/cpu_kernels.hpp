#pragma once
// Which of oneDNN's kernels run a training loop's work on this CPU: they decide the blocked layouts
// and scratch buffers the static estimate counts (runtime/conv_memory.hpp, kernel_memory.hpp), and
// its 16-bit rules hold only on the kernels they were measured on (docs/training-memory.md, "How
// the activations are counted"). Torch-free.

#include <cstdint>
#include <string>

#include "devices/cpu_features.hpp"

namespace cdui::runtime {

/// The CPU's kernel family, by its instruction set.
enum class cpu_kernels {
  avx2,         // no AVX-512: blocked layouts of 8 channels
  avx512,       // AVX-512 without avx512_bf16: oneDNN computes bf16 through fp32
  avx512_bf16,  // AVX-512 with avx512_bf16 and no AMX: what the 16-bit rules were measured on
  amx,          // AMX tiles (amx_bf16): oneDNN's AMX kernels, with buffers of their own
  avx512_bf16_newer_onednn,  // avx512_bf16 under a newer oneDNN (PyPI's torch 2.x), with other buffers
};

/// From the CPU's flags: whether it has avx512f, and its bf16 instructions.
[[nodiscard]] cpu_kernels cpu_kernels_of(bool avx512, const devices::bf16_support& bf16);

/// What `kernels` become under libtorch `torch_major`: the 16-bit rules were measured on 1.13's
/// oneDNN; torch 2.x ships a newer one, whose AVX-512 BF16 kernels keep other scratch buffers.
[[nodiscard]] cpu_kernels under_libtorch(cpu_kernels kernels, int torch_major);

/// This machine's under this build's libtorch, read from /proc/cpuinfo once.
[[nodiscard]] cpu_kernels this_cpu_kernels();

/// The channels oneDNN's blocked layout pads a convolution's tensors to: 16 with AVX-512 (and on
/// CUDA, where these rules stand in), 8 with AVX2.
[[nodiscard]] std::int64_t conv_block(cpu_kernels kernels);

/// Whether the estimate's rules for 16-bit buffers hold on these kernels.
[[nodiscard]] bool measured_16_bit_kernels(cpu_kernels kernels);

/// Why a loop training in 16 bits on kernels its rules were not measured on gets a rough estimate.
[[nodiscard]] std::string unmeasured_16_bit_kernels(const std::string& loop_id, const std::string& precision,
                                                     const std::string& device, cpu_kernels kernels);

} // namespace cdui::runtime
