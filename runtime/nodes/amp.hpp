#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/DeviceType.h>

#include "runtime/oom.hpp"
#include "runtime/precision.hpp"

namespace torch::optim {
class Optimizer;
}

/// Mixed precision for the TrainingLoop: an autocast guard and a loss scaler. Private to runtime.
namespace cdui::runtime::nodes {

/// Enables autocast for one device while it lives (the forward pass and the loss, never the loop),
/// and on leaving clears autocast's cache of low-precision weight copies, so no step ever reuses a
/// copy of older weights (a stale cache took a model's AUC from 0.78 to 0.41: docs/training-memory.md,
/// "What runs under autocast"). A no-op for fp32. Autocast state is thread-local: the guard affects
/// only the calling thread.
class autocast_guard {
public:
  autocast_guard(precision p, c10::DeviceType device);
  ~autocast_guard();
  autocast_guard(const autocast_guard&) = delete;
  autocast_guard& operator=(const autocast_guard&) = delete;

private:
  bool active_ = false;
  c10::DeviceType device_;
  bool was_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::ScalarType::Undefined;
};

/// Whether a CUDA device computes in bfloat16 (Ampere and newer); false off CUDA.
[[nodiscard]] bool cuda_has_bf16(c10::Device device);

/// How many times as long a CPU training step (a 64x512 by 512x512 matmul, forward and backward)
/// takes under bf16 autocast as in fp32: measured once per process, on a thread of its own (so it
/// touches neither the run's generator nor its memory scope), the better of three tries each.
[[nodiscard]] double cpu_bf16_slowdown();

/// What the accelerator's caching allocator held (CUDA builds; zeros elsewhere), then hands its
/// free blocks back to the driver. Called after an out-of-memory error.
[[nodiscard]] oom_figures release_accelerator_cache(const std::string& device);

/// Holds this process's allocations on a CUDA card to `budget` bytes for as long as it lives (seed
/// 001, "Sharing a card": the caching allocator's memory fraction, budget / the card's total), so a
/// run that outgrows its budget runs out of memory alone; then the card is whole again. Nothing on
/// other devices (a sim card or the CPU is capped by the run's counting-allocator scope; MPS cards
/// are never shared by memory), nor with a budget of 0. On a CUDA card it first creates the
/// process's CUDA context and reads what that costs (process_context_window).
class accelerator_cap {
public:
  accelerator_cap(const std::string& device, std::int64_t budget);
  ~accelerator_cap();
  accelerator_cap(const accelerator_cap&) = delete;
  accelerator_cap& operator=(const accelerator_cap&) = delete;

private:
  int cuda_index_ = -1;  // the card capped; -1: none
};

/// GradScaler's defaults (training-memory seed; PyTorch's torch.cuda.amp.GradScaler):
/// "init scale 2^16, growth 2.0, backoff 0.5, growth interval 2000".
inline constexpr double scaler_init_scale = 65536.0;
inline constexpr double scaler_growth_factor = 2.0;
inline constexpr double scaler_backoff_factor = 0.5;
inline constexpr std::int64_t scaler_growth_interval = 2000;

/// A loss scaler with GradScaler's semantics, in plain tensor ops (libtorch 1.13 has no C++
/// GradScaler and its _amp_* ops are CUDA-only). Dynamic: backs off on an overflow and grows after
/// growth_interval clean steps. Static (a fixed scale): never changes, still skips an overflowed step.
class grad_scaler {
public:
  grad_scaler(double scale, bool dynamic);

  [[nodiscard]] at::Tensor scale(const at::Tensor& loss) const;

  /// Divides the accumulated gradients by the scale, once per optimizer step, before clipping.
  /// Returns false when any gradient is inf or NaN.
  [[nodiscard]] bool unscale(const std::vector<at::Tensor>& parameters) const;

  /// Steps the optimizer unless the gradients overflowed, then updates the scale. True if stepped.
  bool step(torch::optim::Optimizer& optimizer, bool finite);

  [[nodiscard]] double current_scale() const { return scale_; }
  [[nodiscard]] std::int64_t growth_tracker() const { return growth_tracker_; }
  [[nodiscard]] std::int64_t skipped_steps() const { return skipped_; }
  [[nodiscard]] bool dynamic() const { return dynamic_; }
  void restore(double scale, std::int64_t growth_tracker);

private:
  double scale_;
  bool dynamic_;
  std::int64_t growth_tracker_ = 0;
  std::int64_t skipped_ = 0;
};

} // namespace cdui::runtime::nodes
