#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "devices/sim_devices.hpp"  // format_bytes

namespace cdui::devices {

class sim_card_memory;

/// Live and peak bytes of a scope, and its cap (0: none).
struct memory_stats {
  std::int64_t live = 0;
  std::int64_t peak = 0;
  std::int64_t cap = 0;
};

/// What one run holds on one device, measured by the counting allocator: every CPU allocation made
/// while the scope is current on a thread is charged to it, and credited back when freed, on
/// whichever thread frees it. With a cap, an allocation that would pass it fails. A scope on a sim
/// card also charges the card's memory, which every process on the card shares: an allocation
/// that would take the card past its total fails too, as on a real card that others use.
class memory_scope {
public:
  /// A scope on `device`; on one of this process's sim cards whose memory is `cap_bytes`, it
  /// charges that card too (sim_card_for).
  memory_scope(std::string device, std::int64_t cap_bytes);
  /// A scope that charges `card` (none: null) besides its own cap.
  memory_scope(std::string device, std::int64_t cap_bytes, std::shared_ptr<sim_card_memory> card);
  ~memory_scope();

  /// Charges n bytes; false (and nothing charged) when that would pass the cap or the card's free
  /// memory.
  [[nodiscard]] bool reserve(std::int64_t n);
  void release(std::int64_t n);
  /// Whether the last refused reserve() was refused by the card (other processes hold its
  /// memory), not by the scope's own cap.
  [[nodiscard]] bool card_was_full() const { return card_was_full_.load(); }
  /// The card this scope charges; null when none.
  [[nodiscard]] const std::shared_ptr<sim_card_memory>& card() const { return card_; }

  [[nodiscard]] memory_stats stats() const;
  [[nodiscard]] const std::string& device() const { return device_; }
  /// What was live when an allocation last failed against the cap (0: none failed).
  [[nodiscard]] std::int64_t live_at_failure() const { return live_at_failure_.load(); }

private:
  std::string device_;
  std::int64_t cap_;
  std::shared_ptr<sim_card_memory> card_;
  std::atomic<bool> card_was_full_{false};
  std::atomic<std::int64_t> live_{0};
  std::atomic<std::int64_t> peak_{0};
  std::atomic<std::int64_t> live_at_failure_{0};
};

/// Makes a scope the one the calling thread's allocations are charged to, until the guard leaves
/// (thread-local; guards nest and restore the scope before them).
class memory_scope_guard {
public:
  explicit memory_scope_guard(std::shared_ptr<memory_scope> scope);
  ~memory_scope_guard();
  memory_scope_guard(const memory_scope_guard&) = delete;
  memory_scope_guard& operator=(const memory_scope_guard&) = delete;

private:
  std::shared_ptr<memory_scope> previous_;
};

/// Installs the counting allocator as libtorch's CPU allocator; idempotent. Tensors allocated before
/// keep their own deleter and are simply not counted.
void install_counting_allocator();

/// Every byte the counting allocator holds for this process, and its peak.
[[nodiscard]] memory_stats process_memory();

} // namespace cdui::devices
