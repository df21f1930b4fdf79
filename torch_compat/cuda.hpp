#pragma once
// What cdui asks of CUDA through libtorch, torch-free for its callers: every call answers (nothing,
// or a default) in a libtorch without CUDA, so no caller tests for CUDA itself.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cdui::torch_compat {

/// Whether this libtorch was built with CUDA (PyPI's torch 2.x: yes; Debian's 1.13: no).
[[nodiscard]] bool has_cuda();

/// The UUID of each CUDA device torch sees, in torch's order, as NVML writes it ("GPU-..."); an
/// empty string for a device whose properties cannot be read; none without CUDA.
[[nodiscard]] std::vector<std::string> cuda_uuids();

/// The caching allocator's figures for one card (c10's DeviceStats, all pools): what tensors hold
/// (allocated) and what the allocator took from the card (reserved: what the card lost).
struct cuda_memory_figures {
  std::int64_t allocated = 0;
  std::int64_t allocated_peak = 0;
  std::int64_t reserved = 0;
  std::int64_t reserved_peak = 0;
  /// The card's memory, as the CUDA runtime gives it.
  std::int64_t total = 0;
};

/// The figures of cuda:`index`; none without CUDA.
[[nodiscard]] std::optional<cuda_memory_figures> cuda_memory(int index);

/// Starts the peaks of cuda:`index` again from what is held now.
void reset_cuda_peaks(int index);

/// Caps what the caching allocator takes from cuda:`index` at `fraction` of the card (1: no cap).
void set_cuda_memory_fraction(int index, double fraction);

/// Creates this process's CUDA context on cuda:`index` now, if it has none there yet (what the
/// context costs is then read around it: runtime::cuda_meter).
void create_cuda_context(int index);

/// Gives the cached, unused blocks of every card back to the driver.
void release_cuda_cache();

/// The compute capability's major number of cuda:`index` (8 and above compute bf16); 0 without CUDA.
[[nodiscard]] int cuda_compute_major(int index);

} // namespace cdui::torch_compat
