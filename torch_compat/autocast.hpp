#pragma once
// Autocast's per-thread state as both libtorch configurations give it (docs/architecture.md): 1.13
// has a call per device kind (set_cpu_enabled, set_autocast_gpu_dtype, ...); 2.x takes the device
// type. Only CPU and CUDA autocast are used.

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace cdui::torch_compat {

[[nodiscard]] inline bool autocast_enabled(c10::DeviceType device) {
#if TORCH_VERSION_MAJOR >= 2
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

inline void set_autocast_enabled(c10::DeviceType device, bool enabled) {
#if TORCH_VERSION_MAJOR >= 2
  at::autocast::set_autocast_enabled(device, enabled);
#else
  device == c10::DeviceType::CUDA ? at::autocast::set_enabled(enabled) : at::autocast::set_cpu_enabled(enabled);
#endif
}

[[nodiscard]] inline c10::ScalarType autocast_dtype(c10::DeviceType device) {
#if TORCH_VERSION_MAJOR >= 2
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

inline void set_autocast_dtype(c10::DeviceType device, c10::ScalarType dtype) {
#if TORCH_VERSION_MAJOR >= 2
  at::autocast::set_autocast_dtype(device, dtype);
#else
  device == c10::DeviceType::CUDA ? at::autocast::set_autocast_gpu_dtype(dtype)
                                  : at::autocast::set_autocast_cpu_dtype(dtype);
#endif
}

} // namespace cdui::torch_compat
