#include "actors/server/cache_store.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/common/guarded.hpp"
#include "messages/atoms.hpp"
#include "messages/json_text.hpp"

namespace cdui::actors {

namespace {

using self_ptr = caf::stateful_actor<cache_store_state>*;

storage::lru_store<stored_item>& instance(cache_store_state& st, const std::string& name) {
  auto i = st.instances.find(name);
  if (i == st.instances.end())
    i = st.instances.emplace(name, storage::lru_store<stored_item>{st.budget}).first;
  return i->second;
}

/// seed 000's /api/health shape: the execution cache counts instances and gives the budget of
/// each; the other two count their entries under their own word (runs, modules).
nlohmann::json health(const cache_store_state& st) {
  std::size_t entries = 0;
  std::int64_t bytes = 0;
  for (const auto& [name, store] : st.instances) {
    entries += store.size();
    bytes += store.bytes();
  }
  if (st.per_instance)
    return {{"instances", st.instances.size()},
            {"entries", entries},
            {"bytes", bytes},
            {"max_bytes_each", st.budget.max_bytes},
            {"max_entries_each", st.budget.max_entries}};
  std::string count{st.budget.count_name};
  return {{count, entries},
          {"max_" + count, st.budget.max_entries},
          {"bytes", bytes},
          {"max_bytes", st.budget.max_bytes}};
}

} // namespace

caf::behavior cache_store(self_ptr self, storage::store_budget budget, bool per_instance) {
  self->state.budget = budget;
  self->state.per_instance = per_instance;
  return guarded_behavior(
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
    [=](atoms::health) { return json_text(health(self->state)); },
    [=](atoms::status) {
      const auto& st = self->state;
      auto state = health(st);
      state["hits"] = st.hits;
      state["misses"] = st.misses;
      state["evictions"] = st.evictions;
      state["too_large"] = st.too_large;
      nlohmann::json j{{"kind", "cache_store"},
                       {"name", st.budget.name},
                       {"mailbox", self->mailbox().size()},
                       {"state", state}};
      return json_text(j);
    }
  );
}

} // namespace cdui::actors
