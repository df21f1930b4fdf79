#pragma once
// torch_compat/: the one place that knows which libtorch cdui is built against (docs/architecture.md,
// "Two torch configurations"). Debian's 1.13 declares c10::Allocator::allocate const; torch 2.x
// does not, and adds copy_data.

#include <cstddef>

#include <c10/core/Allocator.h>
#include <torch/version.h>

namespace cdui::torch_compat {

/// A CPU allocator written once for both: a subclass allocates in allocate_bytes.
class cpu_allocator : public c10::Allocator {
public:
  [[nodiscard]] virtual c10::DataPtr allocate_bytes(std::size_t n) const = 0;

#if TORCH_VERSION_MAJOR >= 2
  c10::DataPtr allocate(std::size_t n) override { return allocate_bytes(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(std::size_t n) const override { return allocate_bytes(n); }
#endif
};

} // namespace cdui::torch_compat
