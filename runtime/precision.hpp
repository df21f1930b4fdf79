#pragma once

#include <optional>
#include <string>

#include "devices/cpu_features.hpp"

namespace cdui::runtime {

/// The number format a TrainingLoop's forward pass and loss run in (parameters stay fp32).
enum class precision { fp32, bf16, fp16 };

[[nodiscard]] const char* to_string(precision p);

/// What a run trains in, and the run_warning (kind precision_fallback) when that is not what was
/// asked for.
struct precision_choice {
  precision ran = precision::fp32;
  std::optional<std::string> warning;
};

/// Resolves a TrainingLoop's precision against its device before the run starts (training-memory
/// seed, "What each device can honour"): CUDA without bf16 gets fp32; MPS gets fp32 for anything but
/// fp32; the CPU and sim cards honour fp32 and bf16, and fp16 falls back to fp32 because libtorch
/// 1.13 has no fp16 autocast on the CPU. An unknown value gets fp32 (validation refuses one in a
/// graph: TrainingLoop's precision is a choice of the three).
[[nodiscard]] precision_choice resolve_precision(const std::string& requested,
                                                 const std::string& device,
                                                 bool cuda_has_bf16);

/// A bf16 probe step that takes this many times as long as in fp32 makes a run say so.
inline constexpr double slow_bf16_ratio = 2.0;

/// The run_warning (kind precision_slow) of a TrainingLoop `node` that trains in bf16 on the CPU
/// (or a sim card, which executes on it), whose probe step in bf16 took `ratio` times as long as in
/// fp32 (training-memory seed: the CPU honours bf16, so the run keeps it; it warns, it does not
/// change the precision). None when the ratio is below slow_bf16_ratio.
[[nodiscard]] std::optional<std::string> precision_slow_warning(const std::string& node, const std::string& device,
                                                                double ratio, const devices::bf16_support& cpu);

} // namespace cdui::runtime
