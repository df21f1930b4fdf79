#include "apps/status_json.hpp"

#include <map>

#include "messages/slot_key.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;

json shared_json(const std::vector<shared_budget_status>& budgets) {
  json shared = json::array();
  for (const auto& g : budgets)
    shared.push_back({{"group", g.group}, {"limit", g.limit}, {"running", g.running}, {"with", g.with}});
  return shared;
}

json run_json(const run_actor_status& run) {
  return {{"kind", "run"},
          {"id", run.id},
          {"mailbox", run.mailbox},
          {"state",
           {{"status", to_string(run.status)},
            {"device", run.device},
            {"events", run.events},
            {"long_polls", run.long_polls}}}};
}

json queue_json(const run_queue_status& q) {
  json queues = json::array();
  for (const auto& slot : q.queues)
    queues.push_back({{"device", slot.device},
                      {"limit", slot.limit},
                      {"open", slot.open},
                      {"running", slot.running},
                      {"waiting", slot.waiting},
                      {"queue_length", slot.waiting.size()},
                      {"shared", shared_json(slot.shared)}});
  json lane = json::array();
  for (const auto& r : q.interactive)
    lane.push_back({{"run_id", r.run_id}, {"session", r.session}});
  json children = json::array();
  for (const auto& run : q.children)
    children.push_back(run_json(run));
  return {{"kind", "run_queue"},
          {"mailbox", q.mailbox},
          {"state",
           {{"queues", queues},
            {"interactive", {{"limit", q.interactive_limit}, {"running", lane}}},
            {"floating", q.floating},
            {"runs", q.runs},
            {"shutting_down", q.shutting_down}}},
          {"children", children}};
}

/// seed 000's /api/health shape: the execution cache counts instances and gives the budget of
/// each; the other two count their entries under their own word (runs, modules).
json budget_json(const cache_store_status& c) {
  if (c.per_instance)
    return {{"instances", c.instances},
            {"entries", c.entries},
            {"bytes", c.bytes},
            {"max_bytes_each", c.max_bytes},
            {"max_entries_each", c.max_entries}};
  return {{c.count_name, c.entries},
          {"max_" + c.count_name, c.max_entries},
          {"bytes", c.bytes},
          {"max_bytes", c.max_bytes}};
}

json cache_json(const cache_store_status& c) {
  auto state = budget_json(c);
  state["hits"] = c.hits;
  state["misses"] = c.misses;
  state["evictions"] = c.evictions;
  state["too_large"] = c.too_large;
  return {{"kind", "cache_store"}, {"name", c.name}, {"mailbox", c.mailbox}, {"state", state}};
}

} // namespace

json status_json(const server_status& status) {
  json children = json::array();
  children.push_back(queue_json(status.queue));
  for (const auto& c : status.stores)
    children.push_back(cache_json(c));
  if (!status.registry_json.empty())
    children.push_back(json::parse(status.registry_json, nullptr, false));
  return {{"kind", "server"}, {"home", status.home.string()}, {"children", children}};
}

json health_json(const std::vector<cache_store_status>& caches) {
  json by_name = json::object();
  for (const auto& c : caches)
    by_name[c.name] = budget_json(c);
  return {{"status", "ok"}, {"caches", by_name}};
}

json workers_json(const std::string& listing_text, const run_queue_status& queue) {
  auto listing = json::parse(listing_text, nullptr, false);
  if (!listing.is_object())
    return listing;
  std::map<std::string, json> slots;
  for (const auto& q : queue.queues)
    slots[q.device] = {{"taken", q.running.size()},
                       {"limit", q.limit},
                       {"waiting", q.waiting.size()},
                       {"shared", shared_json(q.shared)}};
  for (auto& w : listing["workers"])
    for (auto& d : w["devices"]) {
      auto s = slots.find(slot_key{w["name"].get<std::string>(), d["name"].get<std::string>()}.str());
      d["slots"] = s != slots.end() ? s->second : json(nullptr);
    }
  return listing;
}

} // namespace cdui::apps
