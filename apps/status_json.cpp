#include "apps/status_json.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "messages/json_text.hpp"
#include "messages/slot_key.hpp"
#include "messages/wire.hpp"

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

/// The first `most` of `ids`.
std::vector<std::string> first(const std::vector<std::string>& ids, std::size_t most) {
  return {ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(std::min(most, ids.size()))};
}

/// One device's queue: its runs holding the slot, its first `most` waiting runs, and how many wait.
json slot_json(const slot_status& slot, std::size_t most) {
  return {{"device", slot.device},
          {"limit", slot.limit},
          {"open", slot.open},
          {"running", slot.running},
          {"waiting", first(slot.waiting, most)},
          {"queue_length", slot.waiting.size()},
          {"shared", shared_json(slot.shared)}};
}

json queue_json(const run_queue_status& q) {
  json queues = json::array();
  for (const auto& slot : q.queues)
    queues.push_back(slot_json(slot, slot.waiting.size()));
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

/// The shape of GET /api/health (docs/http-api.md): the execution cache counts instances and gives
/// the budget of each; the other two count their entries under their own word (runs, modules).
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

json worker_json(const worker_entry& w) {
  json devices = json::array();
  for (const auto& d : w.devices)
    devices.push_back({{"name", d.name},
                       {"kind", d.kind},
                       {"uuid", d.uuid},
                       {"total_bytes", d.total_bytes},
                       {"free_bytes", d.free_bytes},
                       {"label", d.label}});
  return {{"name", w.name},
          {"status", w.status},
          {"reason", w.reason.empty() ? json(nullptr) : json(w.reason)},
          {"version", w.version},
          {"env_digest", w.env_digest},
          {"node_types_digest", w.node_types_digest},
          {"devices", devices},
          {"running_runs", w.running_runs},
          {"one_shot", w.one_shot},
          {"credential", w.enrolled ? "enrolled" : "session_token"},
          {"draining", w.draining},
          {"connected_ms", w.connected_ms},
          {"heartbeat_age_s", w.heartbeat_age_s}};
}

json bridge_json(const bridge_status& b) {
  json refused = json::object();
  for (std::size_t i = 0; i < b.refused.size(); ++i)
    refused[wire::to_string(static_cast<wire::refusal>(i))] = b.refused[i];
  return {{"kind", "zmq_bridge"},
          {"state",
           {{"endpoint", b.endpoint},
            {"encrypted", b.encrypted},
            {"peers", b.peers},
            {"frames_in", b.frames_in},
            {"frames_out", b.frames_out},
            {"refused", refused}}}};
}

/// The server's actor for a worker: its mailbox, connection, the runs it follows, and the outputs
/// requests waiting for its agent.
json proxy_json(const worker_proxy_status& p) {
  json runs = json::array();
  for (const auto& r : p.runs)
    runs.push_back({{"id", r.id}, {"cursor", r.cursor}, {"adopting", r.adopting}});
  return {{"mailbox", p.mailbox},
          {"connected", p.connected},
          {"disconnected_ms", p.disconnected_ms},
          {"runs", runs},
          {"outputs_waiting", p.outputs_waiting}};
}

json registry_json(const workers_status& w, const std::optional<bridge_status>& bridge) {
  json children = json::array();
  if (bridge)
    children.push_back(bridge_json(*bridge));
  for (const auto& worker : w.workers) {
    json child{{"kind", "worker"},
               {"name", worker.name},
               {"runs", worker.followed_runs},
               {"state", worker_json(worker)}};
    for (const auto& p : w.proxies)
      if (p.worker == worker.name)
        child["proxy"] = proxy_json(p);
    children.push_back(std::move(child));
  }
  return {{"kind", "worker_registry"},
          {"mailbox", w.mailbox},
          {"state",
           {{"workers", w.workers.size()},
            {"refused_connections", w.refused_connections.size()},
            {"heartbeat_ms", w.heartbeat_ms}}},
          {"children", children}};
}

} // namespace

json status_json(const server_status& status) {
  json children = json::array();
  children.push_back(queue_json(status.queue));
  for (const auto& c : status.stores)
    children.push_back(cache_json(c));
  if (status.workers)
    children.push_back(registry_json(*status.workers, status.bridge));
  return {{"kind", "server"}, {"home", status.home.string()}, {"children", children}};
}

json status_summary_json(const server_status& status) {
  const auto& q = status.queue;
  json queues = json::array();
  json running = json::array();
  std::size_t busy_queues = 0;
  std::set<std::string> listed;  // a device set holds several slots: listed once, on its first
  for (const auto& slot : q.queues) {
    if (slot.running.empty() && slot.waiting.empty())
      continue;  // idle: the tree below lists it
    ++busy_queues;
    queues.push_back({{"device", slot.device},
                      {"limit", slot.limit},
                      {"open", slot.open},
                      {"running", slot.running.size()},
                      {"waiting", slot.waiting.size()}});
    for (const auto& id : slot.running)
      if (listed.insert(id).second)
        running.push_back({{"run_id", id}, {"device", slot.device}});
  }
  for (const auto& r : q.interactive)
    running.push_back({{"run_id", r.run_id}, {"device", "interactive"}});
  json waiting = json::array();
  for (const auto& w : q.waiting_runs)
    waiting.push_back({{"run_id", w.id}, {"queue_key", w.queue_key}, {"kind", w.kind},
                       {"reason", w.reason}});
  std::map<std::string, int> by_status;
  if (status.workers)
    for (const auto& w : status.workers->workers)
      ++by_status[w.status];
  json text = json::array();
  text.push_back(std::to_string(running.size()) + " running, " + std::to_string(waiting.size())
                 + " waiting, in " + std::to_string(busy_queues) + " busy of "
                 + std::to_string(q.queues.size()) + " device queues"
                 + (q.shutting_down ? "; the server is shutting down" : ""));
  for (const auto& w : q.waiting_runs)
    text.push_back("run " + w.id + " " + (w.reason.empty() ? "starts now" : w.reason));
  if (status.workers) {
    std::string workers;
    for (const auto& [s, n] : by_status)
      workers += (workers.empty() ? "" : ", ") + std::to_string(n) + " " + s;
    text.push_back("workers: " + (workers.empty() ? std::string{"none has joined"} : workers));
  }
  return {{"text", text},
          {"queues", queues},
          {"running", running},
          {"waiting", waiting},
          {"workers", by_status}};
}

json queues_json(const run_queue_status& q, std::size_t most) {
  json queues = json::array();
  std::set<std::string> shown;
  for (const auto& slot : q.queues) {
    queues.push_back(slot_json(slot, most));
    for (const auto& id : first(slot.waiting, most))
      shown.insert(id);
  }
  auto floating = first(q.floating, most);
  shown.insert(floating.begin(), floating.end());
  json waiting = json::array();
  for (const auto& w : q.waiting_runs)
    if (shown.count(w.id))
      waiting.push_back({{"run_id", w.id}, {"queue_key", w.queue_key}, {"kind", w.kind}, {"reason", w.reason}});
  json lane = json::array();
  for (const auto& r : q.interactive)
    lane.push_back({{"run_id", r.run_id}, {"session", r.session}});
  return {{"queues", queues},
          {"floating", floating},
          {"floating_length", q.floating.size()},
          {"interactive", {{"limit", q.interactive_limit}, {"running", lane}}},
          {"waiting", waiting},
          {"waiting_runs", q.waiting_runs.size()},
          {"limit", most},
          {"shutting_down", q.shutting_down}};
}

std::string status_body(const server_status& status) {
  auto tree = json_text(status_json(status));  // an object with members: "{...}"
  return "{\"summary\":" + json_text(status_summary_json(status)) + "," + tree.substr(1);
}

json health_json(const std::vector<cache_store_status>& caches) {
  json by_name = json::object();
  for (const auto& c : caches)
    by_name[c.name] = budget_json(c);
  return {{"status", "ok"}, {"caches", by_name}};
}

/// A card's memory ledger as GET /api/devices and GET /api/workers show it.
json card_memory_json(const card_memory_status& c) {
  json runs = json::array();
  for (const auto& r : c.runs)
    runs.push_back({{"run_id", r.id}, {"budget_bytes", r.budget}, {"running", r.running}});
  return {{"offerers", c.offerers}, {"reported", c.reported}, {"total_bytes", c.total},
          {"free_bytes", c.free}, {"reserved_bytes", c.reserved}, {"running_bytes", c.running},
          {"may_take_bytes", c.may_take}, {"context_bytes", c.context}, {"context", c.context_name},
          {"runs", runs}};
}

/// Each card shared by memory's ledger (card_memory_json), by slot key: a card that several
/// offerers share shows its one ledger under each of their keys.
std::map<std::string, json> ledgers_by_key(const memory_ledger_status& memory) {
  std::map<std::string, json> ledgers;
  for (const auto& c : memory.cards) {
    auto ledger = card_memory_json(c);
    for (const auto& key : c.offerers)
      ledgers[key] = ledger;
  }
  return ledgers;
}

/// A device's slot counts, its share mode and its ledger (null unless shared by memory).
void describe_device(json& d, const slot_status& slot, const std::map<std::string, json>& ledgers) {
  d["slots"] = {{"taken", slot.running.size()}, {"limit", slot.limit}, {"waiting", slot.waiting.size()}};
  d["mode"] = slot.by_memory ? "shared" : "exclusive";
  auto ledger = ledgers.find(slot.device);
  d["memory"] = ledger != ledgers.end() ? ledger->second : json(nullptr);
}

json workers_json(const workers_status& w, const run_queue_status& queue,
                  const memory_ledger_status& memory) {
  std::map<std::string, const slot_status*> slots;
  for (const auto& q : queue.queues)
    slots[q.device] = &q;
  auto ledgers = ledgers_by_key(memory);
  json workers = json::array();
  for (const auto& worker : w.workers) {
    auto entry = worker_json(worker);
    for (auto& d : entry["devices"]) {
      auto s = slots.find(slot_key{worker.name, d["name"].get<std::string>()}.str());
      if (s == slots.end()) {
        d["slots"] = nullptr;
        d["mode"] = "exclusive";
        d["memory"] = nullptr;
        continue;
      }
      describe_device(d, *s->second, ledgers);
      d["slots"]["shared"] = shared_json(s->second->shared);
    }
    workers.push_back(std::move(entry));
  }
  json enrolled = json::array();
  for (const auto& e : w.enrolled)
    enrolled.push_back({{"name", e.name}, {"connected", e.connected}});
  json refused = json::array();
  for (const auto& r : w.refused_connections)
    refused.push_back({{"name", r.name}, {"version", r.version}, {"reason", r.reason}, {"time_ms", r.time_ms}});
  return {{"workers", workers},
          {"enrolled", enrolled},
          {"refused_connections", refused},
          {"server_version", w.server_version},
          {"node_types_digest", w.node_types_digest}};
}


json devices_json(const run_queue_status& queue, const memory_ledger_status& memory) {
  auto ledgers = ledgers_by_key(memory);
  json devices = json::array();
  for (const auto& q : queue.queues) {
    if (!slot_key::parse(q.device).local())
      continue;  // a worker's: GET /api/workers
    json d{{"device", q.device}};
    describe_device(d, q, ledgers);
    devices.push_back(std::move(d));
  }
  return {{"devices", devices}};
}

} // namespace cdui::apps
