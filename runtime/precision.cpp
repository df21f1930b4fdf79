#include "runtime/precision.hpp"

#include <cstdio>

namespace cdui::runtime {

const char* to_string(precision p) {
  switch (p) {
    case precision::fp32: return "fp32";
    case precision::bf16: return "bf16";
    case precision::fp16: return "fp16";
  }
  return "fp32";
}

precision_choice resolve_precision(const std::string& requested, const std::string& device,
                                   bool cuda_has_bf16) {
  auto fallback = [&](std::string why) {
    return precision_choice{precision::fp32, "precision " + requested + " was requested on "
                                               + device + ", but " + why
                                               + ", so this run trains in fp32."};
  };
  if (requested == "fp32")
    return {precision::fp32, std::nullopt};
  if (requested != "bf16" && requested != "fp16")
    return precision_choice{precision::fp32, "precision '" + requested
                                               + "' is not one of fp32, bf16 or fp16, so this run "
                                                 "trains in fp32."};
  auto wanted = requested == "bf16" ? precision::bf16 : precision::fp16;
  if (device.rfind("mps", 0) == 0)
    return fallback("MPS kernels are float32-native and 16-bit modes are slower there");
  if (device.rfind("cuda", 0) == 0) {
    if (wanted == precision::bf16 && !cuda_has_bf16)
      return fallback("this card has no bfloat16 support");
    return {wanted, std::nullopt};
  }
  if (wanted == precision::fp16)
    return fallback("this libtorch (1.13) has no fp16 autocast on the CPU (its CPU autocast "
                    "supports only bfloat16, and there is no fp16 matmul kernel for the CPU)");
  return {wanted, std::nullopt};
}

std::optional<std::string> precision_slow_warning(const std::string& node, const std::string& device,
                                                  double ratio, const devices::bf16_support& cpu) {
  if (!(ratio >= slow_bf16_ratio))
    return std::nullopt;
  auto list = [](const std::vector<std::string>& items, const char* last) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i)
      out += (i == 0 ? "" : i + 1 == items.size() ? last : ", ") + items[i];
    return out;
  };
  char times[32];
  std::snprintf(times, sizeof times, "%.1f", ratio);
  auto why = cpu.native() ? "although this CPU has " + list(cpu.has, " and ")
                              + ", which this libtorch does not use for every operation"
                          : "since this CPU has no " + list(cpu.lacks, " or ")
                              + " to run bf16 in hardware";
  return "Node " + node + " (TrainingLoop) trains in bf16 on " + device + ", and a bf16 probe step took "
         + times + "x as long as in fp32, " + why
         + ": expect the run to be about that much slower. It keeps bf16 as asked; set precision "
           "fp32 for speed (bf16 halves the activation memory).";
}

} // namespace cdui::runtime
