// The run queue's part that follows the workers: their slots, and the shared budgets of cards
// several offerers offer (policy::card_groups). See run_queue_parts.hpp.
#include "actors/server/run_queue_parts.hpp"

#include <algorithm>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/policy/card_groups.hpp"
#include "messages/atoms.hpp"
#include "messages/slot_key.hpp"

namespace cdui::actors {

using namespace queue_parts;

void queue_parts::regroup(self_ptr self, const std::string& joined) {
  auto& st = self->state;
  for (const auto& lowered : st.groups.regroup(st.slots, st.local, st.workers, joined))
    spdlog::warn("{}", lowered.sentence());
}

namespace {

/// Closes a worker's slot `key` and fails the runs waiting in it with `reason`.
void close_worker_slot(self_ptr self, const std::string& key, const std::string& reason) {
  auto& st = self->state;
  st.slots.set_open(key, false);
  std::vector<std::string> waiting;
  for (const auto& slot : st.slots.slots())
    if (slot.key == key)
      waiting = slot.waiting;
  for (const auto& id : waiting)
    if (st.slots.remove(id))
      if (auto* run = find_run(st, id))
        caf::anon_send(run->actor, atoms::stop::value, reason);
}

} // namespace

void queue_parts::worker_update(self_ptr self, const std::string& name, const std::vector<device_offer>& offers,
                   worker_availability availability, bool one_shot) {
  auto& st = self->state;
  bool open = availability == worker_availability::open;
  policy::known_worker w{{}, {}, open, one_shot, availability};
  for (const auto& d : offers) {
    w.devices.push_back(d.name);
    w.uuids.push_back(d.uuid);
  }
  auto before = st.workers.find(name);
  if (before != st.workers.end() && before->second.devices == w.devices
      && before->second.uuids == w.uuids && before->second.open == open
      && before->second.one_shot == one_shot && before->second.closed == availability) {
    // A heartbeat that changes nothing the queue keeps: only its cards' memory, for the ledger.
    for (const auto& d : offers)
      share_offered(self, slot_key{name, d.name}.str(), d.total_bytes, d.free_bytes);
    return;
  }
  // Devices it no longer offers: their slots close, and the runs waiting for them fail.
  if (before != st.workers.end())
    for (const auto& d : before->second.devices)
      if (std::find(w.devices.begin(), w.devices.end(), d) == w.devices.end())
        close_worker_slot(self, slot_key{name, d}.str(), "worker '" + name + "' no longer offers " + d);
  // Known before its cards are shared: the ledger finds each card by the UUID offered now.
  st.workers[name] = std::move(w);
  for (const auto& d : offers) {
    slot_key key{name, d.name};
    auto limit = policy::worker_slot_limit(key, d.uuid, st.cfg.limits, st.local, st.slots);
    if (st.slots.gated(key.str()))
      st.exclusive_limits[key.str()] = limit;  // by memory now; the limit is for the way back
    else
      st.slots.set_limit(key.str(), limit);
    st.slots.set_open(key.str(), open);
    share_offered(self, key.str(), d.total_bytes, d.free_bytes);
  }
  regroup(self, name);
  if (!st.shutting_down)
    pump(self);
}

void queue_parts::worker_gone(self_ptr self, const std::string& name, const std::string& reason) {
  auto& st = self->state;
  // Its slots, whether it joined since the start or only has runs queued from before it.
  std::vector<std::string> keys;
  for (const auto& slot : st.slots.slots())
    if (slot_key::offered_by(slot.key, name))
      keys.push_back(slot.key);
  for (const auto& key : keys)
    close_worker_slot(self, key, reason);
  st.workers.erase(name);
  regroup(self, "");
}

} // namespace cdui::actors
