#include "actors/policy/admission.hpp"

#include <algorithm>
#include <cstdint>

namespace cdui::policy {

void admission::set_limit(const std::string& key, int limit) {
  slot_of(key).limit = std::max(1, limit);
  dirty_.insert(key);
}

int admission::limit(const std::string& key) const {
  auto i = slots_.find(key);
  return i == slots_.end() ? std::max(1, default_limit) : limit_of(i->second);
}

int admission::limit_of(const slot& s) const {
  return s.limit > 0 ? s.limit : std::max(1, default_limit);
}

void admission::set_open(const std::string& key, bool open) {
  auto& s = slot_of(key);
  if (s.open == open)
    return;
  s.open = open;
  dirty_.insert(key);
  // The device sets waiting here park or come back at the fronts of their other devices.
  for (const auto& id : s.waiting.ids()) {
    const auto& r = runs_.at(id);
    if (r.keys.size() < 2)
      continue;
    bool park = parked(r);
    for (const auto& k : r.keys) {
      auto& holding = slots_.at(k).holding;
      if (park)
        holding.erase(r.seq);
      else
        holding.insert(r.seq, id);
      dirty_.insert(k);
    }
  }
}

bool admission::parked(const run& r) const {
  return r.keys.size() > 1
         && std::any_of(r.keys.begin(), r.keys.end(), [&](const std::string& k) { return !slots_.at(k).open; });
}

const std::string* admission::front_of(const slot& s) const {
  return s.holding.empty() ? nullptr : &s.holding.front();
}

void admission::set_groups(const std::string& key, const std::vector<std::string>& names) {
  auto& s = slot_of(key);
  if (s.groups == names)
    return;
  touch_groups(key);  // leaving a group may give its other keys room
  for (const auto& name : s.groups)
    groups_[name].keys.erase(key);
  s.groups = names;
  for (const auto& name : names)
    groups_[name].keys.insert(key);
  dirty_.insert(key);
}

void admission::set_group_limit(const std::string& name, int limit) {
  groups_[name].limit = std::max(1, limit);
  for (const auto& key : groups_[name].keys)
    dirty_.insert(key);
}

int admission::group_limit(const std::string& name) const {
  auto g = groups_.find(name);
  return g == groups_.end() ? 1 : g->second.limit;
}

std::vector<std::string> admission::group_keys(const std::string& name) const {
  auto g = groups_.find(name);
  return g == groups_.end() ? std::vector<std::string>{}
                            : std::vector<std::string>{g->second.keys.begin(), g->second.keys.end()};
}

std::size_t admission::group_running(const std::string& name) const {
  // A run holding two keys of one group (a device set naming one card twice) counts once.
  return group_holders(name).size();
}

std::set<std::string> admission::group_holders(const std::string& name) const {
  std::set<std::string> runs;
  auto g = groups_.find(name);
  if (g == groups_.end())
    return runs;
  for (const auto& key : g->second.keys)
    if (auto s = slots_.find(key); s != slots_.end())
      runs.insert(s->second.running.begin(), s->second.running.end());
  return runs;
}

bool admission::groups_have_room(const slot& s) const {
  return std::all_of(s.groups.begin(), s.groups.end(), [&](const std::string& g) {
    return group_running(g) < static_cast<std::size_t>(group_limit(g));
  });
}

void admission::touch_groups(const std::string& key) {
  auto s = slots_.find(key);
  if (s == slots_.end())
    return;
  for (const auto& g : s->second.groups)
    for (const auto& k : groups_[g].keys)
      dirty_.insert(k);
}

admission::slot& admission::slot_of(const std::string& key) {
  return slots_[key];
}

void admission::set_gated(const std::string& key, bool gated) {
  auto& s = slot_of(key);
  if (s.gated == gated)
    return;
  s.gated = gated;
  dirty_.insert(key);
  if (gated)
    return;
  // Off the ledger: a run that waited for its answer starts by count like any other.
  for (const auto& id : s.waiting.ids()) {
    auto& r = runs_.at(id);
    if (!on_gated_key(r))
      r.memory = gate::none;
  }
}

bool admission::gated(const std::string& key) const {
  auto i = slots_.find(key);
  return i != slots_.end() && i->second.gated;
}

bool admission::on_gated_key(const run& r) const {
  return std::any_of(r.keys.begin(), r.keys.end(),
                     [&](const std::string& k) { return slots_.at(k).gated; });
}

std::vector<std::string> admission::take_asks() {
  std::vector<std::string> out;
  out.swap(asks_);
  return out;
}

bool admission::move_gate(const std::string& run_id, gate from, gate to) {
  auto i = runs_.find(run_id);
  if (i == runs_.end() || i->second.running || i->second.memory != from)
    return false;
  i->second.memory = to;
  for (const auto& key : i->second.keys)
    dirty_.insert(key);
  return true;
}

bool admission::grant(const std::string& run_id) {
  return move_gate(run_id, gate::asking, gate::granted) || move_gate(run_id, gate::told_to_wait, gate::granted);
}

bool admission::wait(const std::string& run_id) {
  return move_gate(run_id, gate::asking, gate::told_to_wait);
}

void admission::ask_again(const std::string& key) {
  auto i = slots_.find(key);
  if (i == slots_.end())
    return;
  for (const auto& id : i->second.waiting.ids())
    move_gate(id, gate::told_to_wait, gate::none);
}

bool admission::enqueue(const std::string& run_id, const std::vector<std::string>& keys) {
  if (keys.empty() || runs_.count(run_id) != 0)
    return false;
  auto& r = runs_[run_id];
  r.seq = next_seq_++;
  for (const auto& key : keys) {
    if (std::find(r.keys.begin(), r.keys.end(), key) != r.keys.end())
      continue;  // a set that names a device twice holds it once
    r.keys.push_back(key);
    slot_of(key).waiting.push_back(r.seq, run_id);
    dirty_.insert(key);
  }
  if (!parked(r))
    for (const auto& key : r.keys)
      slots_.at(key).holding.push_back(r.seq, run_id);
  return true;
}

bool admission::idle(const std::string& key) const {
  auto i = slots_.find(key);
  if (i == slots_.end())
    return false;  // a device nothing has set up (no limit, never seen) is not offered
  const auto& s = i->second;
  if (!s.open || front_of(s) || s.running.size() >= static_cast<std::size_t>(limit_of(s)) || !groups_have_room(s))
    return false;
  // A run waiting for another offerer of a shared card was there first.
  for (const auto& g : s.groups)
    for (const auto& k : groups_.at(g).keys)
      if (const auto& other = slots_.at(k); other.open && front_of(other))
        return false;
  return true;
}

bool admission::hold(const std::string& run_id, const std::vector<std::string>& keys) {
  if (keys.empty() || runs_.count(run_id) != 0)
    return false;
  auto& r = runs_[run_id];
  r.running = true;
  for (const auto& key : keys) {
    if (std::find(r.keys.begin(), r.keys.end(), key) != r.keys.end())
      continue;
    r.keys.push_back(key);
    slot_of(key).running.insert(run_id);
  }
  return true;
}

bool admission::remove(const std::string& run_id) {
  auto i = runs_.find(run_id);
  if (i == runs_.end() || i->second.running)
    return false;
  for (const auto& key : i->second.keys) {
    slots_[key].waiting.erase(i->second.seq);
    slots_[key].holding.erase(i->second.seq);
    dirty_.insert(key);
  }
  runs_.erase(i);
  return true;
}

bool admission::free_for(const std::string& run_id, const slot& s) const {
  // The run itself may hold another key of a group already (it does not while waiting).
  const auto* front = front_of(s);
  return s.open && front && *front == run_id && s.running.size() < static_cast<std::size_t>(limit_of(s)) && groups_have_room(s);
}

bool admission::can_start(const std::string& run_id) const {
  const auto& keys = runs_.at(run_id).keys;
  return std::all_of(keys.begin(), keys.end(),
                     [&](const std::string& key) { return free_for(run_id, slots_.at(key)); });
}

std::vector<std::string> admission::admit() {
  std::vector<std::string> admitted;
  // Starting a run changes the fronts of its queues only; follow those until nothing moves. The
  // oldest front goes first: runs that wait for one card through two of its offerers (two keys of
  // a group) start in submit order, whichever key they wait in.
  while (!dirty_.empty()) {
    auto pick = dirty_.end();
    std::uint64_t oldest = UINT64_MAX;
    for (auto it = dirty_.begin(); it != dirty_.end();) {
      const auto* front = front_of(slots_[*it]);
      if (!front) {
        it = dirty_.erase(it);
        continue;
      }
      if (auto seq = runs_[*front].seq; seq < oldest) {
        oldest = seq;
        pick = it;
      }
      ++it;
    }
    if (pick == dirty_.end())
      break;
    auto key = *pick;
    dirty_.erase(pick);
    auto id = *front_of(slots_[key]);
    if (!can_start(id))
      continue;
    auto& r = runs_[id];
    if (r.memory != gate::granted && on_gated_key(r)) {
      // Its memory is the ledger's to judge; it holds its place meanwhile.
      if (r.memory == gate::none) {
        r.memory = gate::asking;
        asks_.push_back(id);
      }
      continue;
    }
    r.running = true;
    for (const auto& k : r.keys) {
      auto& other = slots_[k];
      other.waiting.erase(r.seq);
      other.holding.erase(r.seq);
      other.running.insert(id);
      dirty_.insert(k);  // its next run may start too
    }
    admitted.push_back(std::move(id));
  }
  return admitted;
}

void admission::release(const std::string& run_id) {
  auto i = runs_.find(run_id);
  if (i == runs_.end() || !i->second.running)
    return;
  for (const auto& key : i->second.keys) {
    slots_[key].running.erase(run_id);
    dirty_.insert(key);
    touch_groups(key);  // a shared card's other offerers may start a run now
  }
  runs_.erase(i);
}

std::size_t admission::position(const std::string& run_id) const {
  auto i = runs_.find(run_id);
  if (i == runs_.end() || i->second.running)
    return 0;
  return slots_.at(i->second.keys.front()).waiting.place(i->second.seq);
}

wait_cause admission::held_on(const std::string& run_id, const std::string& key) const {
  const auto& s = slots_.at(key);
  wait_cause out;
  out.key = key;
  out.position = s.waiting.place(runs_.at(run_id).seq);
  if (const auto* front = front_of(s); *front != run_id) {
    out.front = *front;
    // A device set that could take this key now, but not one of its others, reserves it.
    const auto& front_keys = runs_.at(out.front).keys;
    auto other = std::find_if(front_keys.begin(), front_keys.end(), [&](const std::string& k) {
      return !free_for(out.front, slots_.at(k));
    });
    out.what = free_for(out.front, s) && other != front_keys.end() ? wait_cause::kind::reserved
                                                                   : wait_cause::kind::behind;
    if (out.what == wait_cause::kind::reserved)
      out.waits_for = *other;
    return out;
  }
  if (s.running.size() >= static_cast<std::size_t>(limit_of(s))) {
    out.what = wait_cause::kind::full;
    out.holders.assign(s.running.begin(), s.running.end());
    out.limit = limit_of(s);
    return out;
  }
  for (const auto& g : s.groups) {
    auto holders = group_holders(g);
    if (holders.size() >= static_cast<std::size_t>(group_limit(g))) {
      out.what = wait_cause::kind::group_full;
      out.holders.assign(holders.begin(), holders.end());
      out.limit = group_limit(g);
      out.group = g;
      return out;
    }
  }
  return {};
}

wait_cause admission::why_waiting(const std::string& run_id) const {
  auto i = runs_.find(run_id);
  if (i == runs_.end() || i->second.running)
    return {};
  const auto& r = i->second;
  wait_cause out;
  // A closed key holds the run wherever it stands, until its worker or an operator opens it.
  auto closed = std::find_if(r.keys.begin(), r.keys.end(),
                             [&](const std::string& k) { return !slots_.at(k).open; });
  if (closed != r.keys.end()) {
    out.what = wait_cause::kind::closed;
    out.key = *closed;
    out.position = slots_.at(*closed).waiting.place(r.seq);
    return out;
  }
  for (const auto& key : r.keys)
    if (out = held_on(run_id, key); out.what != wait_cause::kind::none)
      break;
  if (out.what == wait_cause::kind::none) {
    auto gated = std::find_if(r.keys.begin(), r.keys.end(),
                              [&](const std::string& k) { return slots_.at(k).gated; });
    if (r.memory == gate::granted || gated == r.keys.end())
      return {};
    out.what = wait_cause::kind::memory;
    out.key = *gated;
    out.position = slots_.at(*gated).waiting.place(r.seq);
  }
  for (const auto& key : r.keys)
    if (const auto* front = front_of(slots_.at(key)); key != out.key && front && *front == run_id)
      out.reserving.push_back(key);
  return out;
}

std::vector<admission::slot_view> admission::slots() const {
  std::vector<slot_view> out;
  for (const auto& [key, s] : slots_) {
    slot_view v{key,      limit_of(s), s.open, {s.running.begin(), s.running.end()},
                s.waiting.ids(), s.groups, s.gated};
    out.push_back(std::move(v));
  }
  return out;
}

} // namespace cdui::policy
