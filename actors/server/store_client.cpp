#include "actors/server/store_client.hpp"

#include <chrono>

#include <caf/all.hpp>

#include "actors/server/cache_store.hpp"
#include "messages/atoms.hpp"

namespace cdui::actors {

namespace {

/// How long a run waits for a store's answer before it treats the store as empty.
constexpr auto store_timeout = std::chrono::seconds(30);

/// The value held under `key`, if any and if it holds a T.
template <class T>
std::optional<T> get(caf::actor_system& system, const cache_store_actor& store, const std::string& instance,
                     const std::string& key) {
  std::optional<T> found;
  if (!store)
    return found;
  caf::scoped_actor self{system};
  self->request(store, store_timeout, atoms::get::value, instance, key)
    .receive(
      [&](const stored_item& item) {
        if (item.value)
          if (const auto* x = std::any_cast<T>(item.value.get()))
            found = *x;
      },
      [](const caf::error&) {});
  return found;
}

void put(const cache_store_actor& store, const std::string& instance, const std::string& key, std::any value,
         std::int64_t bytes) {
  if (store)
    caf::anon_send(store, atoms::put::value, instance, key,
                   stored_item{std::make_shared<const std::any>(std::move(value))}, bytes);
}

} // namespace

store_client::store_client(caf::actor_system& system, store_handles stores, std::string session,
                           std::string run_id)
  : system_(system), stores_(std::move(stores)), session_(std::move(session)),
    run_id_(std::move(run_id)) {}

std::optional<runtime::cached_node> store_client::cached(const std::string& node_key) {
  return get<runtime::cached_node>(system_, stores_.execution_cache, session_, node_key);
}

void store_client::cache(const std::string& node_key, runtime::cached_node node, std::int64_t bytes) {
  put(stores_.execution_cache, session_, node_key, std::move(node), bytes);
}

void store_client::forget(const std::string& node_key) {
  // Answered before the run reports its end, so the session's next run finds the entry gone.
  if (!stores_.execution_cache)
    return;
  caf::scoped_actor self{system_};
  self->request(stores_.execution_cache, store_timeout, atoms::erase::value, session_, node_key)
    .receive([](bool) {}, [](const caf::error&) {});
}

std::optional<runtime::value> store_client::persisted_model(const std::string& state_key) {
  return get<runtime::value>(system_, stores_.node_state, "", state_key);
}

void store_client::persist_model(const std::string& state_key, runtime::value model,
                                 std::int64_t bytes) {
  // Held as a value, an any inside the any (std::any{model} would copy the any itself), so that
  // get<runtime::value> finds it.
  put(stores_.node_state, "", state_key, std::any{std::in_place_type<runtime::value>, std::move(model)},
      bytes);
}

void store_client::record(std::map<std::string, runtime::port_values> outputs, std::int64_t bytes) {
  put(stores_.run_outputs, "", run_id_, std::move(outputs), bytes);
}

} // namespace cdui::actors
