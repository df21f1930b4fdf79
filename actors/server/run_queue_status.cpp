// The run queue's part of /api/status. See run_queue_parts.hpp.
#include "actors/server/run_queue_parts.hpp"

#include <algorithm>
#include <memory>
#include <set>

#include <caf/all.hpp>

#include "actors/common/gather.hpp"

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
    slot_status s{slot.key, slot.limit, slot.open, slot.running, slot.waiting, {}, slot.gated};
    // Its shared budgets: the card it shares with other offerers, a one-shot worker's single run.
    for (const auto& g : slot.groups) {
      auto with = st.slots.group_keys(g);
      with.erase(std::remove(with.begin(), with.end(), slot.key), with.end());
      s.shared.push_back({g, st.slots.group_limit(g), st.slots.group_running(g), std::move(with)});
    }
    out.queues.push_back(std::move(s));
  }
  out.interactive_limit = st.cfg.interactive_limit;
  for (const auto& [id, run] : st.runs)
    if (run.lane == run_lane::interactive)
      out.interactive.push_back({id.str(), run.session});
  for (const auto& id : st.runs.floating())
    out.floating.push_back(id.str());
  out.runs = st.runs.size();
  out.shutting_down = st.shutting_down;
  // Every queued run once (a device set waits in several queues), with why it waits.
  std::set<std::string> seen;
  auto note = [&](const std::string& id, const std::string& key) {
    if (seen.insert(id).second)
      out.waiting_runs.push_back({id, key, waiting_kind(st, id), waiting_reason(st, id)});
  };
  for (const auto& slot : st.slots.slots())
    for (const auto& id : slot.waiting)
      note(id, slot.key);
  for (const auto& id : st.runs.floating())
    note(id.str(), st.runs.find(id)->floating->pool ? "one-shot" : "any");
  out.queue_waits = st.queue_waits;
  return out;
}

} // namespace

caf::result<run_queue_status> queue_parts::status_tree(self_ptr self, bool with_runs) {
  if (!with_runs)
    return queue_status(self);
  std::vector<std::pair<run_id, caf::actor>> runs;
  for (const auto& [id, run] : self->state.runs)
    runs.emplace_back(id, run.actor);
  return gather_status<run_actor_status>(
    self, queue_status(self), runs, std::chrono::seconds(5),
    [](run_queue_status& queue, run_actor_status run) { queue.children.push_back(std::move(run)); });
}

} // namespace cdui::actors
