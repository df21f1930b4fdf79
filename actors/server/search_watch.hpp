#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include <caf/fwd.hpp>

namespace cdui::actors {

/// How many times a sweep's or a study's actor is replaced after it ends unexpectedly; past it,
/// the search is left active in the store and the next start follows it again.
inline constexpr std::size_t max_search_refollows = 3;

/// Called on the watch's thread when a search's actor ended unexpectedly: follow it again from the
/// store ("sweep" or "study", its id). It must not wait on an actor.
using search_refollow = std::function<void(const std::string& kind, const std::string& id)>;

/// The supervisor of the sweeps' and the studies' actors, which the facade spawns:
/// (attach, kind, id, actor) monitors one. An actor that ends normally (its search ended) or for a
/// shutdown is forgotten; one that ends otherwise (killed, or a failure no handler caught) is
/// logged and `refollow` is called, at most max_search_refollows times per search, so that its
/// search goes on instead of staying "active" with no actor until the next start.
/// (status) -> std::size_t: the actors it watches now.
caf::actor spawn_search_watch(caf::actor_system& system, search_refollow refollow);

} // namespace cdui::actors
