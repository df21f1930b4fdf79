#pragma once

#include <optional>
#include <string>

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

} // namespace cdui::runtime
