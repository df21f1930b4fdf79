#pragma once

#include <any>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "storage/lru_store.hpp"

namespace cdui::actors {

/// A value a store holds: the runtime's (node outputs, a model, a run's outputs), which only the
/// runtime looks inside. Shared, never copied: a store hands out the object it holds.
struct stored_item {
  std::shared_ptr<const std::any> value;
};

struct cache_store_state {
  storage::store_budget budget;
  /// Whether the store keeps one LRU per instance (the execution cache: one per editor session),
  /// each with the whole budget, or one for everything (instance "").
  bool per_instance = false;
  std::map<std::string, storage::lru_store<stored_item>> instances;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
  /// Values refused because they alone are larger than the byte budget.
  std::uint64_t too_large = 0;
  static inline const char* name = "cache_store";
};

/// One of the server's three in-memory stores (seed 000, "The server's own memory"), bounded by
/// bytes and by count, least recently used out first. Protocol:
/// (put, instance, key, stored_item, bytes) -> bool stored; (get, instance, key) -> stored_item (null
/// value when absent); (erase, instance, key) -> bool; (drop, instance) -> bool (an editor session
/// ended); (health) -> JSON text in /api/health's shape; (status) -> JSON text for /api/status.
caf::behavior cache_store(caf::stateful_actor<cache_store_state>* self, storage::store_budget budget,
                          bool per_instance);

} // namespace cdui::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cdui::actors::stored_item)
