// The run queue's part of /api/status. See run_queue_parts.hpp.
#include "actors/server/run_queue_parts.hpp"

#include <algorithm>
#include <memory>

#include <caf/all.hpp>

#include "messages/actor_status.hpp"
#include "messages/atoms.hpp"

namespace cdui::actors {

using namespace queue_parts;

namespace {

/// The queue's own status: each slot's queue and shared budgets, the interactive lane, the
/// floating runs.
run_queue_status queue_status(self_ptr self) {
  const auto& st = self->state;
  run_queue_status out;
  out.mailbox = self->mailbox().size();
  for (const auto& slot : st.slots.slots()) {
    slot_status s{slot.key, slot.limit, slot.open, slot.running, slot.waiting, {}};
    // Its shared budgets: the card it shares with other offerers, a one-shot worker's single run.
    for (const auto& g : slot.groups) {
      auto with = st.slots.group_keys(g);
      with.erase(std::remove(with.begin(), with.end(), slot.key), with.end());
      s.shared.push_back({g, st.slots.group_limit(g), st.slots.group_running(g), std::move(with)});
    }
    out.queues.push_back(std::move(s));
  }
  out.interactive_limit = st.cfg.interactive_limit;
  for (const auto& [id, session] : st.interactive)
    out.interactive.push_back({id, session});
  out.floating.assign(st.floating.begin(), st.floating.end());
  out.runs = st.runs.size();
  out.shutting_down = st.shutting_down;
  return out;
}

} // namespace

caf::result<run_queue_status> queue_parts::status_tree(self_ptr self) {
  auto me = std::make_shared<run_queue_status>(queue_status(self));
  auto pending = std::make_shared<std::size_t>(self->state.runs.size());
  if (*pending == 0)
    return *me;
  auto rp = self->make_response_promise<run_queue_status>();
  for (const auto& [id, run] : self->state.runs) {
    self->request(run, std::chrono::seconds(5), atoms::status::value)
      .then(
        [=](run_actor_status& child) mutable {
          me->children.push_back(std::move(child));
          if (--*pending == 0)
            rp.deliver(std::move(*me));
        },
        [=](caf::error&) mutable {
          if (--*pending == 0)
            rp.deliver(std::move(*me));
        });
  }
  return rp;
}

} // namespace cdui::actors
