#include "actors/admission.hpp"

#include <algorithm>

namespace cdui::actors {

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
  slot_of(key).open = open;
  dirty_.insert(key);
}

admission::slot& admission::slot_of(const std::string& key) {
  return slots_[key];
}

bool admission::enqueue(const std::string& run_id, const std::vector<std::string>& keys) {
  if (keys.empty() || runs_.count(run_id) != 0)
    return false;
  auto& r = runs_[run_id];
  for (const auto& key : keys) {
    if (std::find(r.keys.begin(), r.keys.end(), key) != r.keys.end())
      continue;  // a set that names a device twice holds it once
    r.keys.push_back(key);
    slot_of(key).waiting.push_back(run_id);
    dirty_.insert(key);
  }
  return true;
}

bool admission::idle(const std::string& key) const {
  auto i = slots_.find(key);
  if (i == slots_.end())
    return false;  // a device nothing has set up (no limit, never seen) is not offered
  const auto& s = i->second;
  return s.open && s.waiting.empty() && s.running.size() < static_cast<std::size_t>(limit_of(s));
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
    auto& waiting = slots_[key].waiting;
    waiting.erase(std::find(waiting.begin(), waiting.end(), run_id));
    dirty_.insert(key);
  }
  runs_.erase(i);
  return true;
}

bool admission::can_start(const std::string& run_id) const {
  for (const auto& key : runs_.at(run_id).keys) {
    const auto& s = slots_.at(key);
    if (!s.open || s.waiting.empty() || s.waiting.front() != run_id)
      return false;
    if (s.running.size() >= static_cast<std::size_t>(limit_of(s)))
      return false;
  }
  return true;
}

std::vector<std::string> admission::admit() {
  std::vector<std::string> admitted;
  // Starting a run changes the fronts of its queues only; follow those until nothing moves.
  while (!dirty_.empty()) {
    auto key = *dirty_.begin();
    dirty_.erase(dirty_.begin());
    auto& s = slots_[key];
    while (!s.waiting.empty() && can_start(s.waiting.front())) {
      auto id = s.waiting.front();
      auto& r = runs_[id];
      r.running = true;
      for (const auto& k : r.keys) {
        auto& other = slots_[k];
        other.waiting.pop_front();
        other.running.insert(id);
        if (k != key)
          dirty_.insert(k);
      }
      admitted.push_back(std::move(id));
    }
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
  }
  runs_.erase(i);
}

std::size_t admission::position(const std::string& run_id) const {
  auto i = runs_.find(run_id);
  if (i == runs_.end() || i->second.running)
    return 0;
  const auto& waiting = slots_.at(i->second.keys.front()).waiting;
  auto at = std::find(waiting.begin(), waiting.end(), run_id);
  return static_cast<std::size_t>(at - waiting.begin()) + 1;
}

std::vector<admission::slot_view> admission::slots() const {
  std::vector<slot_view> out;
  for (const auto& [key, s] : slots_) {
    slot_view v{key, limit_of(s), s.open, {s.running.begin(), s.running.end()},
                {s.waiting.begin(), s.waiting.end()}};
    out.push_back(std::move(v));
  }
  return out;
}

} // namespace cdui::actors
