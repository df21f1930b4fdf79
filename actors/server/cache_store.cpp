#include "actors/server/cache_store.hpp"

#include <caf/all.hpp>

#include "actors/common/guarded.hpp"
#include "messages/atoms.hpp"

namespace cdui::actors {

namespace {

using self_ptr = cache_store_actor::stateful_pointer<cache_store_state>;

storage::lru_store<stored_item>& instance(cache_store_state& st, const std::string& name) {
  auto i = st.instances.find(name);
  if (i == st.instances.end())
    i = st.instances.emplace(name, storage::lru_store<stored_item>{st.budget}).first;
  return i->second;
}

/// What the store holds against its budget.
cache_store_status status_of(const cache_store_state& st, std::uint64_t mailbox) {
  cache_store_status out;
  out.name = std::string{st.budget.name};
  out.mailbox = mailbox;
  out.per_instance = st.per_instance;
  out.instances = st.instances.size();
  for (const auto& [name, store] : st.instances) {
    out.entries += store.size();
    out.bytes += store.bytes();
  }
  out.max_bytes = st.budget.max_bytes;
  out.max_entries = static_cast<std::int64_t>(st.budget.max_entries);
  out.count_name = std::string{st.budget.count_name};
  out.hits = st.hits;
  out.misses = st.misses;
  out.evictions = st.evictions;
  out.too_large = st.too_large;
  return out;
}

} // namespace

cache_store_actor::behavior_type cache_store(self_ptr self, storage::store_budget budget,
                                            bool per_instance) {
  self->state.budget = budget;
  self->state.per_instance = per_instance;
  return guarded_typed_behavior<cache_store_actor>(
    "cache store",
    [=](atoms::put, const std::string& name, const std::string& key, stored_item& item,
        std::int64_t bytes) {
      auto& st = self->state;
      auto result = instance(st, name).put(key, std::move(item), bytes);
      st.evictions += result.evicted.size();
      if (!result.stored)
        ++st.too_large;
      return result.stored;
    },
    [=](atoms::get, const std::string& name, const std::string& key) {
      auto& st = self->state;
      auto i = st.instances.find(name);
      auto* item = i == st.instances.end() ? nullptr : i->second.get(key);
      ++(item ? st.hits : st.misses);
      return item ? *item : stored_item{};
    },
    [=](atoms::erase, const std::string& name, const std::string& key) {
      auto i = self->state.instances.find(name);
      return i != self->state.instances.end() && i->second.erase(key);
    },
    [=](atoms::drop, const std::string& name) { return self->state.instances.erase(name) > 0; },
    [=](atoms::status) { return status_of(self->state, self->mailbox().size()); }
  );
}

} // namespace cdui::actors
