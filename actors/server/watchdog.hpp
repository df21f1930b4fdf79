#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/fwd.hpp>

namespace cdui::actors {

/// A top-level actor the watchdog watches, and the name its failure gives it.
struct watched_actor {
  std::string name;  // "run queue", "worker registry", "execution cache store", ...
  caf::strong_actor_ptr actor;
};

/// Watches the server's own actors, which nothing replaces (the run queue, the worker registry,
/// the cache stores hold the server's state): one that ends for any reason but a shutdown is
/// reported, once, to `on_failure` with a sentence naming it and the reason. The server cannot go
/// on without it; `cdui start` stops then, and its next start recovers the runs from the store.
/// Returns the watchdog, which quits with the actors' system or on an exit message.
caf::actor spawn_watchdog(caf::actor_system& system, std::vector<watched_actor> actors,
                          std::function<void(const std::string&)> on_failure);

} // namespace cdui::actors
