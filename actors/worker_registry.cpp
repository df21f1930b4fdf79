#include "actors/worker_registry.hpp"

#include <algorithm>
#include <chrono>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "messages/atoms.hpp"

namespace cdui::actors {

namespace {

using self_ptr = caf::stateful_actor<worker_registry_state>*;

/// How often late heartbeats are looked for: a quarter of the interval, so that a late worker is
/// seen Degraded before it is Disconnected; at most once a second, at least every 10 ms.
std::chrono::milliseconds tick_interval(const worker_table& table) {
  return std::chrono::milliseconds(std::clamp<std::int64_t>(table.settings().heartbeat_ms / 4, 10, 1000));
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

template <class T>
void reply(self_ptr self, const std::string& identity, wire::message_type type, const T& payload) {
  self->state.bridge->send(identity, type, wire::encode(payload));
}

nlohmann::json worker_json(const worker_record& w, std::int64_t now) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : w.devices)
    devices.push_back({{"name", d.name},
                       {"kind", d.kind},
                       {"uuid", d.uuid},
                       {"total_bytes", d.total_bytes},
                       {"free_bytes", d.free_bytes}});
  return {{"name", w.name},
          {"status", to_string(w.status)},
          {"reason", w.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(w.reason)},
          {"version", w.version},
          {"env_digest", w.env_digest},
          {"node_types_digest", w.node_types_digest},
          {"devices", devices},
          {"running_runs", w.running_runs},
          {"one_shot", w.one_shot},
          {"draining", w.draining},
          {"connected_ms", w.connected_ms},
          {"heartbeat_age_s", static_cast<double>(now - w.last_heartbeat_ms) / 1000.0}};
}

nlohmann::json workers_json(const worker_table& table) {
  auto now = now_ms();
  nlohmann::json workers = nlohmann::json::array();
  for (const auto& [name, w] : table.workers())
    workers.push_back(worker_json(w, now));
  nlohmann::json refused = nlohmann::json::array();
  for (const auto& r : table.refused())
    refused.push_back(
      {{"name", r.name}, {"version", r.version}, {"reason", r.reason}, {"time_ms", r.time_ms}});
  return {{"workers", workers},
          {"refused_connections", refused},
          {"server_version", table.settings().version},
          {"node_types_digest", table.settings().node_types_digest}};
}

nlohmann::json bridge_json(const zmq_bridge& bridge) {
  auto s = bridge.stats();
  nlohmann::json refused = nlohmann::json::object();
  for (auto r : {wire::refusal::too_large, wire::refusal::malformed, wire::refusal::wrong_version,
                 wire::refusal::unknown_type})
    refused[wire::to_string(r)] = s.refused[static_cast<std::size_t>(r)];
  return {{"kind", "zmq_bridge"},
          {"state",
           {{"endpoint", s.endpoint},
            {"peers", s.peers},
            {"frames_in", s.frames_in},
            {"frames_out", s.frames_out},
            {"refused", refused}}}};
}

void on_hello(self_ptr self, const std::string& identity, const hello& h) {
  auto& table = *self->state.table;
  auto verdict = table.hello(identity, h, now_ms());
  if (!verdict.accepted) {
    spdlog::warn("refused agent '{}' (cdui {}): {}", h.name, h.version, verdict.reason);
    reply(self, identity, wire::message_type::refused, refused{verdict.reason, false});
    return;
  }
  if (verdict.replaced_identity)
    reply(self, *verdict.replaced_identity, wire::message_type::refused,
          refused{"a newer agent connected as worker '" + h.name + "'", false});
  const auto& w = *table.by_name(h.name);
  spdlog::info("worker '{}' joined ({} devices, status {}{}{})", h.name, h.devices.size(),
               to_string(w.status), w.reason.empty() ? "" : ": ", w.reason);
  reply(self, identity, wire::message_type::welcome,
        welcome{table.settings().version, static_cast<std::uint32_t>(table.settings().heartbeat_ms)});
}

} // namespace

caf::behavior worker_registry(self_ptr self, worker_table::config cfg,
                              std::shared_ptr<zmq_bridge> bridge) {
  self->state.table = std::make_unique<worker_table>(std::move(cfg));
  self->state.bridge = std::move(bridge);
  self->delayed_send(self, tick_interval(*self->state.table), atoms::tick::value);
  return {
    [=](atoms::wire_in, const std::string& identity, const hello& h) { on_hello(self, identity, h); },
    [=](atoms::wire_in, const std::string& identity, const heartbeat& h) {
      if (!self->state.table->heartbeat(identity, h, now_ms()))
        // A server that restarted, or a connection it dropped: the agent says hello again.
        reply(self, identity, wire::message_type::refused,
              refused{"this server does not know this connection; say hello again", true});
    },
    [=](atoms::wire_in, const std::string& identity, const run_update& u) {
      // Runs are not assigned to workers yet (issue 5's next part): nothing can be waiting for it.
      spdlog::warn("worker registry: an update for run {} that no worker was given", u.run_id);
    },
    [=](atoms::wire_in, const std::string& identity, const run_done& d) {
      spdlog::warn("worker registry: the end of run {} that no worker was given", d.run_id);
    },
    [=](atoms::tick) {
      for (const auto& name : self->state.table->tick(now_ms())) {
        const auto& w = *self->state.table->by_name(name);
        spdlog::info("worker '{}' is {}{}{}", name, to_string(w.status),
                     w.reason.empty() ? "" : ": ", w.reason);
      }
      self->delayed_send(self, tick_interval(*self->state.table), atoms::tick::value);
    },
    [=](atoms::workers) { return workers_json(*self->state.table).dump(); },
    [=](atoms::status) {
      auto workers = workers_json(*self->state.table);
      nlohmann::json children = nlohmann::json::array({bridge_json(*self->state.bridge)});
      for (const auto& w : workers["workers"])
        children.push_back({{"kind", "worker"}, {"name", w["name"]}, {"state", w}});
      nlohmann::json j{{"kind", "worker_registry"},
                       {"mailbox", self->mailbox().size()},
                       {"state",
                        {{"workers", workers["workers"].size()},
                         {"refused_connections", workers["refused_connections"].size()},
                         {"heartbeat_ms", self->state.table->settings().heartbeat_ms}}},
                       {"children", children}};
      return j.dump();
    },
  };
}

} // namespace cdui::actors
