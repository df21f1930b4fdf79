#include "devices/memory.hpp"

#include <cstdio>
#include <mutex>
#include <new>

#include "devices/sim_card_memory.hpp"
#include "devices/sim_card_registry.hpp"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include "torch_compat/allocator.hpp"

namespace cdui::devices {

namespace {

thread_local std::shared_ptr<memory_scope> current_scope;

std::atomic<std::int64_t> process_live{0};
std::atomic<std::int64_t> process_peak{0};

void raise_peak(std::atomic<std::int64_t>& peak, std::int64_t value) {
  auto seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

/// What each counted allocation carries in a header just before its data: the real allocation and
/// the scope that paid for it, so the free credits that scope whichever thread frees it. Keeping it
/// in a header (not a separate context) leaves the DataPtr's context equal to its data, which
/// libtorch's raw_allocate callers (oneDNN scratch buffers, for one) require.
struct counted_block {
  c10::DataPtr inner;
  std::shared_ptr<memory_scope> scope;
  std::int64_t bytes;
};

/// The header's size: a multiple of the default allocator's 64-byte alignment, so data stays aligned.
constexpr std::size_t header_bytes = 64;
static_assert(sizeof(counted_block) <= header_bytes);

counted_block* header_of(void* data) {
  return reinterpret_cast<counted_block*>(static_cast<char*>(data) - header_bytes);
}

void free_counted(void* data) {
  auto* block = header_of(data);
  if (block->scope)
    block->scope->release(block->bytes);
  process_live.fetch_sub(block->bytes, std::memory_order_relaxed);
  // The inner DataPtr owns the memory the header lives in: move it out before it frees that memory.
  auto inner = std::move(block->inner);
  block->~counted_block();
}

class counting_allocator final : public torch_compat::cpu_allocator {
public:
  explicit counting_allocator(c10::Allocator* inner) : inner_(inner) {}

  c10::DataPtr allocate_bytes(size_t n) const override {
    auto bytes = static_cast<std::int64_t>(n);
    const auto& scope = current_scope;
    if (scope && !scope->reserve(bytes)) {
      auto s = scope->stats();
      if (scope->card_was_full()) {
        const auto& card = scope->card();
        TORCH_CHECK_WITH(OutOfMemoryError, false, scope->device(), " out of memory. Tried to allocate ",
                         format_bytes(bytes), "; the card has ", format_bytes(card->free_bytes()),
                         " free of its ", format_bytes(card->total()), " (this run holds ",
                         format_bytes(s.live), ", other processes the rest).");
      }
      TORCH_CHECK_WITH(OutOfMemoryError, false, scope->device(), " out of memory. Tried to allocate ",
                       format_bytes(bytes), "; ", format_bytes(s.live), " already held of its ",
                       format_bytes(s.cap), " cap.");
    }
    auto inner = inner_->allocate(n + header_bytes);
    auto* data = static_cast<char*>(inner.get()) + header_bytes;
    auto device = inner.device();
    new (header_of(data)) counted_block{std::move(inner), scope, bytes};
    raise_peak(process_peak, process_live.fetch_add(bytes, std::memory_order_relaxed) + bytes);
    return {data, data, &free_counted, device};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_counted; }

private:
  c10::Allocator* inner_;
};

} // namespace

memory_scope::memory_scope(std::string device, std::int64_t cap_bytes)
  : memory_scope(device, cap_bytes, cap_bytes > 0 ? sim_card_for(device, cap_bytes) : nullptr) {}

memory_scope::memory_scope(std::string device, std::int64_t cap_bytes,
                           std::shared_ptr<sim_card_memory> card)
  : device_(std::move(device)), cap_(cap_bytes), card_(std::move(card)) {}

memory_scope::~memory_scope() = default;

bool memory_scope::reserve(std::int64_t n) {
  auto live = live_.fetch_add(n, std::memory_order_relaxed) + n;
  bool over_cap = cap_ > 0 && live > cap_;
  bool card_full = !over_cap && card_ && !card_->charge(n);
  if (over_cap || card_full) {
    card_was_full_.store(card_full);
    live_at_failure_.store(live_.fetch_sub(n, std::memory_order_relaxed) - n);
    return false;
  }
  raise_peak(peak_, live);
  return true;
}

void memory_scope::release(std::int64_t n) {
  if (card_)
    card_->credit(n);
  live_.fetch_sub(n, std::memory_order_relaxed);
}

memory_stats memory_scope::stats() const {
  return {live_.load(std::memory_order_relaxed), peak_.load(std::memory_order_relaxed), cap_};
}

memory_scope_guard::memory_scope_guard(std::shared_ptr<memory_scope> scope)
  : previous_(std::move(current_scope)) {
  current_scope = std::move(scope);
}

memory_scope_guard::~memory_scope_guard() {
  current_scope = std::move(previous_);
}

void install_counting_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Lives as long as the process: tensors freed at exit still call into it.
    static counting_allocator allocator{c10::GetDefaultCPUAllocator()};
    c10::SetCPUAllocator(&allocator, /*priority=*/1);
  });
}

memory_stats process_memory() {
  return {process_live.load(), process_peak.load(), 0};
}

} // namespace cdui::devices
