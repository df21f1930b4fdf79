#include "actors/server/search_watch.hpp"

#include <map>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/guarded.hpp"
#include "messages/atoms.hpp"

namespace cdui::actors {

namespace {

struct watched_search {
  std::string kind;
  std::string id;
};

struct search_watch_state {
  search_refollow refollow;
  std::map<caf::actor_addr, watched_search> watched;
  /// How many times each search was followed again ("kind id" -> count).
  std::map<std::string, std::size_t> refollows;
  static inline const char* name = "search_watch";
};

caf::behavior search_watch(caf::stateful_actor<search_watch_state>* self, search_refollow refollow) {
  self->state.refollow = std::move(refollow);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    auto i = st.watched.find(down.source);
    if (i == st.watched.end())
      return;
    auto search = std::move(i->second);
    st.watched.erase(i);
    if (down.reason == caf::exit_reason::normal || down.reason == caf::exit_reason::user_shutdown || !down.reason)
      return;  // its search ended, or the server is stopping
    auto& count = st.refollows[search.kind + " " + search.id];
    if (count >= max_search_refollows) {
      spdlog::error("{} {}: its actor ended unexpectedly again ({}) after {} replacements; it stays "
                    "active until the next start, which follows it again", search.kind, search.id,
                    caf::to_string(down.reason), count);
      return;
    }
    ++count;
    spdlog::error("{} {}: its actor ended unexpectedly ({}); it is followed again from the store",
                  search.kind, search.id, caf::to_string(down.reason));
    st.refollow(search.kind, search.id);
  });
  return guarded_behavior(
    "search watch",
    [=](atoms::attach, const std::string& kind, const std::string& id, const caf::actor& actor) {
      self->monitor(actor);
      self->state.watched[actor.address()] = {kind, id};
    },
    [=](atoms::status) { return self->state.watched.size(); });
}

} // namespace

caf::actor spawn_search_watch(caf::actor_system& system, search_refollow refollow) {
  return system.spawn(search_watch, std::move(refollow));
}

} // namespace cdui::actors
