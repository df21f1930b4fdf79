#pragma once

#include <any>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/server/fwd.hpp"
#include "storage/lru_store.hpp"

namespace cdui::actors {

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

/// One of the server's three in-memory stores (docs/http-api.md, "The in-memory stores"), bounded by
/// bytes and by count, least recently used out first. Protocol:
/// (put, instance, key, stored_item, bytes) -> bool stored; (get, instance, key) -> stored_item (null
/// value when absent); (erase, instance, key) -> bool; (drop, instance) -> bool (an editor session
/// ended); (status) -> cache_store_status (for /api/health and /api/status).
cache_store_actor::behavior_type cache_store(cache_store_actor::stateful_pointer<cache_store_state> self,
                                            storage::store_budget budget, bool per_instance);

} // namespace cdui::actors
