#include "runtime/cpu_kernels.hpp"

#include <algorithm>

namespace cdui::runtime {

cpu_kernels cpu_kernels_of(bool avx512, const devices::bf16_support& bf16) {
  auto has = [&](const char* instruction) {
    return std::find(bf16.has.begin(), bf16.has.end(), instruction) != bf16.has.end();
  };
  if (!avx512)
    return cpu_kernels::avx2;
  if (has("amx_bf16"))
    return cpu_kernels::amx;
  return has("avx512_bf16") ? cpu_kernels::avx512_bf16 : cpu_kernels::avx512;
}

cpu_kernels under_libtorch(cpu_kernels kernels, int torch_major) {
  return torch_major >= 2 && kernels == cpu_kernels::avx512_bf16 ? cpu_kernels::avx512_bf16_newer_onednn : kernels;
}

cpu_kernels this_cpu_kernels() {
  static const cpu_kernels kernels = under_libtorch(
      cpu_kernels_of(devices::cpu_has_avx512(), devices::cpu_bf16_support()), CDUI_TORCH_MAJOR);
  return kernels;
}

std::int64_t conv_block(cpu_kernels kernels) {
  return kernels == cpu_kernels::avx2 ? 8 : 16;
}

bool measured_16_bit_kernels(cpu_kernels kernels) {
  return kernels == cpu_kernels::avx512_bf16;
}

std::string unmeasured_16_bit_kernels(const std::string& loop_id, const std::string& precision,
                                      const std::string& device, cpu_kernels kernels) {
  auto which = kernels == cpu_kernels::avx2     ? "oneDNN's without AVX-512"
               : kernels == cpu_kernels::avx512 ? "oneDNN's AVX-512 ones without avx512_bf16, which compute bf16 through fp32"
               : kernels == cpu_kernels::amx    ? "oneDNN's AMX ones (amx_bf16)"
                                                : "the AVX-512 BF16 ones of a newer oneDNN (this build's torch 2.x), not libtorch 1.13's";
  return "TrainingLoop '" + loop_id + "' trains in " + precision + " on " + device + ", whose kernels here are "
         + which + ": the estimate's rules for their 16-bit buffers were measured on oneDNN's AVX-512 BF16 "
           "kernels (avx512_bf16 without AMX), and these allocate otherwise";
}

} // namespace cdui::runtime
