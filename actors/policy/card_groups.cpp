#include "actors/policy/card_groups.hpp"

#include <algorithm>
#include <limits>
#include <string_view>

namespace cdui::policy {

namespace {

bool is_card(const std::string& device, const std::string& uuid) {
  return !uuid.empty() && devices::kind_of(device) != "cpu";
}

constexpr std::string_view one_shot_prefix = "one-shot:";

} // namespace

std::string one_shot_group(const std::string& worker) {
  return std::string{one_shot_prefix} + worker;
}

std::string one_shot_worker(const std::string& group) {
  return group.compare(0, one_shot_prefix.size(), one_shot_prefix) == 0 ? group.substr(one_shot_prefix.size())
                                                                         : std::string{};
}

int worker_slot_limit(const slot_key& key, const std::string& uuid,
                      const std::map<std::string, int>& overrides, const local_devices& local,
                      const admission& slots) {
  if (auto limit = overrides.find(key.str()); limit != overrides.end())
    return limit->second;
  if (is_card(key.device, uuid))
    for (const auto& d : local.devices)
      if (d.uuid == uuid)
        return slots.limit(d.name);
  return key.device == "cpu" ? devices::cpu_slot_limit : devices::accelerator_slot_limit;
}

std::string card_id(const slot_key& key, const std::string& uuid) {
  return is_card(key.device, uuid) ? "uuid:" + uuid : key.str();
}

std::string lowered_limit::sentence() const {
  return key + ": its limit of " + std::to_string(own) + " runs is lowered to " + std::to_string(limit)
         + ": " + by + " offers the same card (" + uuid + ") with that limit";
}

std::vector<lowered_limit> card_groups::regroup(admission& slots, const local_devices& local,
                                                const known_workers& workers,
                                                const std::string& joined) {
  std::map<std::string, std::vector<std::string>> groups_of;  // slot key -> its groups
  struct offerer {
    std::string key;
    bool online;
  };
  std::map<std::string, std::vector<offerer>> cards;  // UUID -> the slots that offer it
  for (const auto& d : local.devices)
    if (is_card(d.name, d.uuid))
      cards[d.uuid].push_back({d.name, true});
  for (const auto& [name, w] : workers) {
    for (std::size_t i = 0; i < w.devices.size(); ++i) {
      auto key = slot_key{name, w.devices[i]}.str();
      if (i < w.uuids.size() && is_card(w.devices[i], w.uuids[i]))
        cards[w.uuids[i]].push_back({key, w.open});
      if (w.one_shot)
        groups_of[key].push_back(one_shot_group(name));
    }
    if (w.one_shot)
      slots.set_group_limit(one_shot_group(name), 1);
  }
  std::vector<lowered_limit> reported;
  for (const auto& [uuid, offerers] : cards) {
    if (offerers.size() < 2)
      continue;
    auto group = "card:" + uuid;
    int online = std::numeric_limits<int>::max();
    int any = std::numeric_limits<int>::max();
    std::string whose;
    for (const auto& o : offerers) {
      groups_of[o.key].push_back(group);
      any = std::min(any, slots.limit(o.key));
      if (o.online && slots.limit(o.key) < online) {
        online = slots.limit(o.key);
        whose = o.key;
      }
    }
    int limit = online != std::numeric_limits<int>::max() ? online : any;
    slots.set_group_limit(group, limit);
    for (const auto& o : offerers)
      if (slots.limit(o.key) <= limit)
        lowered_.erase(o.key);
      else if (slot_key::offered_by(o.key, joined) && lowered_.insert(o.key).second)
        reported.push_back({o.key, slots.limit(o.key), limit, whose, uuid});
  }
  std::set<std::string> keys;
  for (const auto& slot : slots.slots())
    keys.insert(slot.key);
  for (const auto& [key, groups] : groups_of)
    keys.insert(key);
  for (const auto& key : keys)
    slots.set_groups(key, groups_of[key]);
  return reported;
}

} // namespace cdui::policy
