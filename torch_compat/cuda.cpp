#include "torch_compat/cuda.hpp"

#include <torch/cuda.h>
#include <torch/version.h>

#ifdef CDUI_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>

#include "devices/cuda_cards.hpp"
#endif

namespace cdui::torch_compat {

#ifdef CDUI_WITH_CUDA

namespace {
// The allocator's statistics moved from c10::cuda to c10::CachingAllocator in 2.x.
#if TORCH_VERSION_MAJOR >= 2
using stat_type = c10::CachingAllocator::StatType;
#else
using stat_type = c10::cuda::CUDACachingAllocator::StatType;
#endif

/// Whether cuda:`index` exists here (a CUDA build on a machine without the card has none).
bool is_card(int index) { return index >= 0 && index < static_cast<int>(torch::cuda::device_count()); }

} // namespace

bool has_cuda() { return true; }

std::vector<std::string> cuda_uuids() {
  std::vector<std::string> uuids;
  auto count = static_cast<int>(torch::cuda::device_count());
  for (int i = 0; i < count; ++i) {
    try {
      const auto* props = at::cuda::getDeviceProperties(i);
      uuids.push_back(devices::gpu_uuid_text(reinterpret_cast<const unsigned char*>(props->uuid.bytes)));
    } catch (const std::exception&) {
      uuids.emplace_back();
    }
  }
  return uuids;
}

std::optional<cuda_memory_figures> cuda_memory(int index) {
  if (!is_card(index))
    return std::nullopt;
  namespace allocator = c10::cuda::CUDACachingAllocator;
  auto stats = allocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  auto all = static_cast<std::size_t>(stat_type::AGGREGATE);
  cuda_memory_figures f;
  f.allocated = stats.allocated_bytes[all].current;
  f.allocated_peak = stats.allocated_bytes[all].peak;
  f.reserved = stats.reserved_bytes[all].current;
  f.reserved_peak = stats.reserved_bytes[all].peak;
  f.total = static_cast<std::int64_t>(at::cuda::getDeviceProperties(index)->totalGlobalMem);
  return f;
}

void reset_cuda_peaks(int index) {
  if (is_card(index))
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
}

void set_cuda_memory_fraction(int index, double fraction) {
  if (is_card(index))
    c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, static_cast<c10::DeviceIndex>(index));
}

void create_cuda_context(int index) {
  if (!is_card(index))
    return;
  // Forced: torch's own device switch defers cudaSetDevice while the card has no context yet.
  // Since CUDA 12 setting the device creates its primary context; cudaFree(nullptr) makes sure.
  // The thread's device stays the card's (going back to another would create a context there).
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index), true);
  C10_CUDA_CHECK(cudaFree(nullptr));
}

void release_cuda_cache() {
  if (is_card(0))
    c10::cuda::CUDACachingAllocator::emptyCache();
}

int cuda_compute_major(int index) { return is_card(index) ? at::cuda::getDeviceProperties(index)->major : 0; }

#else

bool has_cuda() { return false; }
std::vector<std::string> cuda_uuids() { return {}; }
std::optional<cuda_memory_figures> cuda_memory(int) { return std::nullopt; }
void reset_cuda_peaks(int) {}
void set_cuda_memory_fraction(int, double) {}
void create_cuda_context(int) {}
void release_cuda_cache() {}
int cuda_compute_major(int) { return 0; }

#endif

} // namespace cdui::torch_compat
