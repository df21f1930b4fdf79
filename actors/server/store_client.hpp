#pragma once

#include <string>

#include <caf/fwd.hpp>

#include "actors/server/fwd.hpp"
#include "runtime/run_stores.hpp"

namespace cdui::actors {

/// The three cache_store actors of a server.
struct store_handles {
  cache_store_actor execution_cache;
  cache_store_actor run_outputs;
  cache_store_actor node_state;
};

/// The server's stores as one run's engine sees them: each call is a request to a cache_store
/// actor, made from the run's executor thread (never from a CAF scheduler thread). A store that
/// does not answer counts as a miss; a run never fails because a cache did.
class store_client : public runtime::run_stores {
public:
  /// `session`: the editor session whose execution cache the run uses; `run_id`: the key of its
  /// recorded outputs.
  store_client(caf::actor_system& system, store_handles stores, std::string session,
               std::string run_id);

  std::optional<runtime::cached_node> cached(const std::string& node_key) override;
  void cache(const std::string& node_key, runtime::cached_node node, std::int64_t bytes) override;
  void forget(const std::string& node_key) override;
  std::optional<runtime::value> persisted_model(const std::string& state_key) override;
  void persist_model(const std::string& state_key, runtime::value model, std::int64_t bytes) override;
  void record(std::map<std::string, runtime::port_values> outputs, std::int64_t bytes) override;

private:
  caf::actor_system& system_;
  store_handles stores_;
  std::string session_;
  std::string run_id_;
};

} // namespace cdui::actors
