#include "actors/server/watchdog.hpp"

#include <algorithm>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "messages/atoms.hpp"

namespace cdui::actors {

namespace {

struct watchdog_state {
  std::vector<watched_actor> actors;
  std::function<void(const std::string&)> on_failure;
  bool reported = false;
  static inline const char* name = "watchdog";
};

caf::behavior watchdog(caf::stateful_actor<watchdog_state>* self, std::vector<watched_actor> actors,
                       std::function<void(const std::string&)> on_failure) {
  self->state.actors = std::move(actors);
  self->state.on_failure = std::move(on_failure);
  for (const auto& a : self->state.actors)
    self->monitor(a.actor);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    if (down.reason == caf::exit_reason::user_shutdown || down.reason == caf::exit_reason::normal)
      return;  // the server is stopping
    auto i = std::find_if(st.actors.begin(), st.actors.end(),
                          [&](const watched_actor& a) { return caf::actor_cast<caf::actor_addr>(a.actor) == down.source; });
    if (i == st.actors.end() || st.reported)
      return;
    st.reported = true;
    auto why = "the server's " + i->name + " actor ended unexpectedly (" + caf::to_string(down.reason)
               + "); the server cannot go on without it and stops";
    spdlog::error("{}", why);
    if (st.on_failure)
      st.on_failure(why);
  });
  // It only watches; (status) says how many actors it watches.
  return {[self](atoms::status) { return self->state.actors.size(); }};
}

} // namespace

caf::actor spawn_watchdog(caf::actor_system& system, std::vector<watched_actor> actors,
                          std::function<void(const std::string&)> on_failure) {
  return system.spawn(watchdog, std::move(actors), std::move(on_failure));
}

} // namespace cdui::actors
