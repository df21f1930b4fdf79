#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cdui::storage {

/// How much one store may hold: bytes and entries, both enforced. `max_bytes` 0 disables the byte
/// budget and leaves the count limit in charge (docs/http-api.md, "The in-memory stores").
struct store_budget {
  std::string_view name;     // as /api/health names it: execution_cache, run_output_store, ...
  std::string_view env_var;  // its setting, in MB
  std::int64_t max_bytes = 0;
  std::size_t max_entries = 1;
  std::string_view count_name = "entries";  // what /api/health counts: entries, runs, modules
};

inline constexpr std::int64_t bytes_per_mb = 1024 * 1024;

/// The execution cache: node outputs, 1 GB and 256 of them per editor session,
/// CODEFYUI_EXECUTION_CACHE_MAX_MB (docs/http-api.md, "The in-memory stores").
inline constexpr store_budget execution_cache_budget{
    "execution_cache", "CODEFYUI_EXECUTION_CACHE_MAX_MB", 1024 * bytes_per_mb, 256};
/// The run output store: the port values of record_outputs runs, 2 GB and 20 runs,
/// CODEFYUI_RUN_OUTPUT_STORE_MAX_MB (docs/http-api.md, "The in-memory stores").
inline constexpr store_budget run_output_store_budget{
    "run_output_store", "CODEFYUI_RUN_OUTPUT_STORE_MAX_MB", 2048 * bytes_per_mb, 20, "runs"};
/// The node state store: persistent Model weights per node, 1 GB and 200 modules,
/// CODEFYUI_NODE_STATE_STORE_MAX_MB (docs/http-api.md, "The in-memory stores").
inline constexpr store_budget node_state_store_budget{
    "node_state_store", "CODEFYUI_NODE_STATE_STORE_MAX_MB", 1024 * bytes_per_mb, 200, "modules"};

/// A budget with its byte budget read from its env var, and a warning sentence when the value
/// was not a whole number of MB (empty when all is well).
struct budget_reading {
  store_budget budget;
  std::string warning;
};

/// Reads `defaults.env_var` in MB. Unset or empty keeps the default; a value that is not a
/// non-negative integer (or overflows) keeps it too, with a warning naming the variable and value.
[[nodiscard]] budget_reading read_budget(const store_budget& defaults);

/// Entries by key, bounded by bytes and by count, evicting the least recently used. The caller
/// says how many bytes each value holds. No threads, no clock: an actor owns it.
template <class Value>
class lru_store {
public:
  /// `max_bytes` 0: no byte budget. A count limit below 1 is treated as 1.
  lru_store(std::int64_t max_bytes, std::size_t max_entries)
      : max_bytes_{max_bytes}, max_entries_{std::max<std::size_t>(max_entries, 1)} {}
  explicit lru_store(const store_budget& budget) : lru_store(budget.max_bytes, budget.max_entries) {}

  struct put_result {
    /// False when the value alone is larger than the byte budget; the key then holds nothing.
    bool stored = false;
    /// Keys evicted to make room, least recently used first.
    std::vector<std::string> evicted;
  };

  /// Stores `value` under `key` as the most recently used entry, replacing what the key held.
  [[nodiscard]] put_result put(const std::string& key, Value value, std::int64_t bytes) {
    put_result result;
    // A refused replacement still drops the old value: it is stale.
    erase(key);
    if (max_bytes_ > 0 && bytes > max_bytes_)
      return result;
    entries_.push_front(entry{key, std::move(value), bytes});
    index_.emplace(key, entries_.begin());
    bytes_ += bytes;
    while (entries_.size() > max_entries_ || (max_bytes_ > 0 && bytes_ > max_bytes_)) {
      result.evicted.push_back(entries_.back().key);
      remove(std::prev(entries_.end()));
    }
    result.stored = true;
    return result;
  }

  /// The value under `key`, now the most recently used; nullptr when absent.
  [[nodiscard]] Value* get(const std::string& key) {
    auto i = index_.find(key);
    if (i == index_.end())
      return nullptr;
    entries_.splice(entries_.begin(), entries_, i->second);
    return &i->second->value;
  }

  /// Removes `key`; false when it was absent.
  bool erase(const std::string& key) {
    auto i = index_.find(key);
    if (i == index_.end())
      return false;
    remove(i->second);
    return true;
  }

  [[nodiscard]] std::int64_t bytes() const { return bytes_; }
  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] std::int64_t max_bytes() const { return max_bytes_; }
  [[nodiscard]] std::size_t max_entries() const { return max_entries_; }

private:
  struct entry {
    std::string key;
    Value value;
    std::int64_t bytes;
  };
  using iterator = typename std::list<entry>::iterator;

  void remove(iterator e) {
    bytes_ -= e->bytes;
    index_.erase(e->key);
    entries_.erase(e);
  }

  std::int64_t max_bytes_;
  std::size_t max_entries_;
  std::int64_t bytes_ = 0;
  std::list<entry> entries_;  // most recently used first
  std::unordered_map<std::string, iterator> index_;
};

} // namespace cdui::storage
