#include "actors/server/worker_registry.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/guarded.hpp"
#include "actors/common/log_limit.hpp"
#include "messages/clock.hpp"
#include "messages/atoms.hpp"
#include "messages/json_text.hpp"
#include "messages/run_outcome.hpp"
#include "messages/text.hpp"
#include "storage/credentials.hpp"

namespace cdui::actors {

using policy::worker_record;
using policy::worker_status;
using policy::worker_table;
using policy::is_valid_worker_name;
using policy::worker_name_rule;

namespace {

using self_ptr = caf::stateful_actor<worker_registry_state>*;

/// How often late heartbeats are looked for: a quarter of the interval, so that a late worker is
/// seen Degraded before it is Disconnected; at most once a second, at least every 10 ms.
std::chrono::milliseconds tick_interval(const worker_table& table) {
  return std::chrono::milliseconds(std::clamp<std::int64_t>(table.settings().heartbeat_ms / 4, 10, 1000));
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
          {"credential", w.enrolled ? "enrolled" : "session_token"},
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
  nlohmann::json enrolled = nlohmann::json::array();
  for (const auto& [name, hash] : table.settings().enrolled) {
    const auto* w = table.by_name(name);
    enrolled.push_back({{"name", name},
                        {"connected", w != nullptr && w->status != worker_status::disconnected}});
  }
  return {{"workers", workers},
          {"enrolled", enrolled},
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
            {"encrypted", s.encrypted},
            {"peers", s.peers},
            {"frames_in", s.frames_in},
            {"frames_out", s.frames_out},
            {"refused", refused}}}};
}

/// Tells the run queue whether the worker's slots admit runs now.
void announce(self_ptr self, const worker_record& w) {
  if (!self->state.queue)
    return;
  // A one-shot worker executes a single run, then its agent exits: once it has one, it is closed.
  bool busy_one_shot = w.one_shot
                       && (!w.running_runs.empty()
                           || std::any_of(self->state.runs.begin(), self->state.runs.end(),
                                          [&](const auto& r) { return r.second.worker == w.name; }));
  self->send(self->state.queue, atoms::worker_update::value, w.name, w.devices,
             w.accepts_runs() && !busy_one_shot, w.one_shot);
}

/// The runs of `identity`'s worker, or nullptr when the connection is no worker's or the run is
/// not one it was given: a worker reports on its own runs only.
/// Asks the agent to send the run's events again after what the server has; at most once a
/// second for the same cursor (the request, or the replay, may be lost too).
constexpr std::int64_t resend_again_ms = 1000;

void ask_resend(self_ptr self, const std::string& identity, const std::string& run_id,
                remote_run& run) {
  auto now = now_ms();
  if (run.resend_asked == run.cursor && now - run.resend_asked_ms < resend_again_ms)
    return;
  run.resend_asked = run.cursor;
  run.resend_asked_ms = now;
  reply(self, identity, wire::message_type::resend, run_cursor{run_id, run.cursor});
}

remote_run* run_of(self_ptr self, const std::string& identity, const std::string& run_id) {
  const auto* w = self->state.table->by_identity(identity);
  auto i = self->state.runs.find(run_id);
  if (w == nullptr || i == self->state.runs.end() || i->second.worker != w->name) {
    spdlog::warn("worker registry: a report on run {} from a connection that was not given it",
                 run_id);
    return nullptr;
  }
  return &i->second;
}

void end_run(self_ptr self, const std::string& run_id, run_status status, const std::string& why) {
  auto i = self->state.runs.find(run_id);
  if (i == self->state.runs.end())
    return;
  self->send(i->second.run, atoms::finished::value, run_outcome{status, why, "{}"});
  self->state.runs.erase(i);
}

void on_hello(self_ptr self, const std::string& identity, const hello& h) {
  auto& table = *self->state.table;
  auto verdict = table.hello(identity, h, now_ms());
  if (!verdict.accepted) {
    auto n = ++self->state.refused_hellos;
    if (worth_logging(n))
      spdlog::warn("refused agent {} (cdui {}; {} refused so far): {}", text::quoted(h.name),
                   text::quoted(h.version), n, verdict.reason);
    reply(self, identity, wire::message_type::refused, refused{verdict.reason, false});
    return;
  }
  if (verdict.replaced_identity)
    reply(self, *verdict.replaced_identity, wire::message_type::refused,
          refused{"a newer agent connected as worker '" + h.name + "'", false});
  const auto& w = *table.by_name(h.name);
  spdlog::info("worker '{}' joined ({} devices, status {}{}{})", h.name, h.devices.size(),
               to_string(w.status), w.reason.empty() ? "" : ": ", w.reason);
  welcome answer{table.settings().version, static_cast<std::uint32_t>(table.settings().heartbeat_ms),
                 {}, {}};
  // The runs it still has: resumed from where the server's record of them ends (or adopted after
  // a server restart); any other it is told to forget.
  std::set<std::string> listed{h.running_runs.begin(), h.running_runs.end()};
  auto& runs = self->state.runs;
  for (const auto& id : h.running_runs) {
    auto i = runs.find(id);
    if (i != runs.end() && i->second.worker == h.name) {
      answer.resume.push_back({id, i->second.cursor});
      if (i->second.adopting_since_ms != 0)
        spdlog::info("run {} adopted: worker '{}' still executes it", id, h.name);
      i->second.adopting_since_ms = 0;
    } else {
      answer.forget.push_back(id);
    }
  }
  // Runs it was given and no longer has: their process ended while the connection was down.
  std::vector<std::string> lost;
  for (const auto& [id, run] : runs)
    if (run.worker == h.name && !listed.count(id))
      lost.push_back(id);
  reply(self, identity, wire::message_type::welcome, answer);
  for (const auto& id : lost)
    end_run(self, id, run_status::failed,
            "worker '" + h.name + "' came back without the run: its process ended while the "
            "worker was not connected, and its end was not reported");
  announce(self, w);
}

/// A new credential for `name` (enroll, or re-key when `rekey`), its hash in cdui.db.
enrollment give_credential(self_ptr self, const std::string& name, bool rekey) {
  auto& st = self->state;
  enrollment e{name, "", "", ""};
  if (!is_valid_worker_name(name)) {
    e.error = "field 'name': " + text::quoted(name) + " is not a worker name (" + worker_name_rule + ")";
    e.refusal = "invalid";
    return e;
  }
  bool enrolled = st.table->is_enrolled(name);
  if (!rekey && enrolled) {
    e.error = "worker '" + name + "' is enrolled already; re-key it (POST /api/workers/" + name
              + "/rekey) for a new credential";
    e.refusal = "conflict";
    return e;
  }
  if (rekey && !enrolled) {
    e.error = "worker '" + name + "' is not enrolled, so it has no credential to replace (a "
              "same-host agent uses the session token)";
    e.refusal = "unknown";
    return e;
  }
  e.credential = storage::new_credential();
  auto hash = storage::credential_hash(e.credential);
  auto now = now_ms();
  st.store->put_worker({name, hash, now, rekey ? now : 0});  // a re-key keeps enrolled_ms
  st.table->enroll(name, hash);
  spdlog::info("worker '{}' {}", name, rekey ? "re-keyed: its old credential no longer joins" : "enrolled");
  return e;
}

/// An operator removed the worker: its enrollment goes, its connection is refused for good, the
/// runs it executes end failed (and are stopped there) and the runs waiting for it fail.
enrollment remove_worker(self_ptr self, const std::string& name) {
  auto& st = self->state;
  enrollment e{name, "", "", ""};
  auto removed = st.table->remove(name);
  if (!removed) {
    e.error = "no worker named '" + name + "' is enrolled or has connected to this server";
    e.refusal = "unknown";
    return e;
  }
  st.store->remove_worker(name);
  auto reason = "worker '" + name + "' was removed by an operator";
  bool connected = !removed->identity.empty() && removed->status != worker_status::disconnected;
  std::vector<std::string> ids;
  for (const auto& [id, run] : st.runs)
    if (run.worker == name)
      ids.push_back(id);
  for (const auto& id : ids) {
    if (connected)
      reply(self, removed->identity, wire::message_type::stop_run, stop_run{id, true});
    end_run(self, id, run_status::failed, reason);
  }
  if (connected)
    reply(self, removed->identity, wire::message_type::refused, refused{reason, false});
  if (st.queue)
    self->send(st.queue, atoms::worker_gone::value, name, reason);
  spdlog::info("{}: {} run(s) it executed failed", reason, ids.size());
  return e;
}

} // namespace

caf::behavior worker_registry(self_ptr self, worker_table::config cfg,
                              std::shared_ptr<zmq_bridge> bridge,
                              std::shared_ptr<storage::run_store> store,
                              std::int64_t resume_grace_ms) {
  for (const auto& w : store->enrolled_workers())
    cfg.enrolled[w.name] = w.credential_hash;
  self->state.table = std::make_unique<worker_table>(std::move(cfg));
  self->state.bridge = std::move(bridge);
  self->state.store = std::move(store);
  self->state.resume_grace_ms = resume_grace_ms;
  self->delayed_send(self, tick_interval(*self->state.table), atoms::tick::value);
  return guarded_behavior(
    "worker registry",
    [=](atoms::wire_in, const std::string& identity, const hello& h) { on_hello(self, identity, h); },
    [=](atoms::wire_in, const std::string& identity, const heartbeat& h) {
      auto& table = *self->state.table;
      const auto* before = table.by_identity(identity);
      bool accepted = before != nullptr && before->accepts_runs();
      if (!table.heartbeat(identity, h, now_ms())) {
        // A server that restarted, or a connection it dropped: the agent says hello again.
        reply(self, identity, wire::message_type::refused,
              refused{"this server does not know this connection; say hello again", true});
        return;
      }
      const auto* w = table.by_identity(identity);
      if (w->accepts_runs() != accepted)
        announce(self, *w);
    },
    [=](atoms::wire_in, const std::string& identity, const run_update& u) {
      auto* run = run_of(self, identity, u.run_id);
      if (run == nullptr)
        return;
      // Events are taken in cursor order only: a replay's old ones are dropped, and after a gap
      // (a message lost on the way) the agent is asked to send again from the last one held.
      std::vector<run_event> fresh;
      bool gap = false;
      for (const auto& e : u.events) {
        if (e.cursor <= run->cursor)
          continue;
        if (e.cursor != run->cursor + 1) {
          gap = true;
          break;
        }
        run->cursor = e.cursor;
        fresh.push_back(e);
      }
      if (!fresh.empty()) {
        run->resend_asked.reset();
        self->send(run->run, atoms::append::value, std::move(fresh));
      }
      if (gap)
        ask_resend(self, identity, u.run_id, *run);
    },
    [=](atoms::wire_in, const std::string& identity, const run_done& d) {
      const auto* w = self->state.table->by_identity(identity);
      if (w == nullptr)
        return;
      if (auto* run = run_of(self, identity, d.run_id)) {
        if (run->cursor < d.last_cursor) {
          // Not every event is here yet: they come again, then the end.
          ask_resend(self, identity, d.run_id, *run);
          return;
        }
        self->send(run->run, atoms::finished::value, d.outcome);
        self->state.runs.erase(d.run_id);
      }
      // Recorded, or not this server's to record (it ended here already): the agent may forget it.
      reply(self, identity, wire::message_type::run_ack, run_ack{d.run_id});
    },
    [=](atoms::wire_in, const std::string& identity, const outputs_reply& r) {
      auto& st = self->state;
      const auto* w = st.table->by_identity(identity);
      auto i = st.outputs_waiting.find(r.run_id);
      if (w == nullptr || i == st.outputs_waiting.end())
        return;
      auto& waiting = i->second;
      auto mine = std::stable_partition(waiting.begin(), waiting.end(),
                                        [&](const pending_outputs& p) { return p.worker != w->name; });
      for (auto p = mine; p != waiting.end(); ++p)
        p->promise.deliver(r);
      waiting.erase(mine, waiting.end());
      if (waiting.empty())
        st.outputs_waiting.erase(i);
    },
    [=](atoms::outputs, const std::string& run_id,
        const std::string& worker) -> caf::result<outputs_reply> {
      auto& st = self->state;
      const auto* w = st.table->by_name(worker);
      if (w == nullptr || w->status == worker_status::disconnected)
        return outputs_reply{run_id, false, "",
                             "worker '" + worker + "' is not connected; run " + run_id
                               + "'s recorded outputs stay on it, and can be read while it is",
                             true};
      auto& waiting = st.outputs_waiting[run_id];
      auto rp = self->make_response_promise<outputs_reply>();
      waiting.push_back({rp, worker, now_ms()});
      reply(self, w->identity, wire::message_type::outputs_request, outputs_request{run_id});
      return rp;
    },
    [=](atoms::attach, const caf::actor& queue) { self->state.queue = queue; },
    [=](atoms::adopt, const std::string& run_id, const std::string& worker, const caf::actor& run,
        std::uint64_t cursor) {
      self->state.runs[run_id] = remote_run{run, worker, cursor, now_ms(), std::nullopt, 0};
    },
    [=](atoms::assign, assign_run& a, const std::string& worker, const caf::actor& run) {
      auto& st = self->state;
      const auto* w = st.table->by_name(worker);
      st.runs[a.run_id] = remote_run{run, worker, 0, 0, std::nullopt, 0};
      // Late or drained since the run was admitted, it is still connected: the run goes to it (a
      // drain lets admitted runs finish; a worker that is really gone ends it after the grace).
      if (w == nullptr || w->status == worker_status::disconnected) {
        // Admitted while the worker was there, and it went between: the run never reached it.
        end_run(self, a.run_id, run_status::failed,
                "worker '" + worker + "' went away before the run could be sent to it");
        return;
      }
      spdlog::info("run {} goes to worker '{}' on {}", a.run_id, worker, a.devices.front());
      reply(self, w->identity, wire::message_type::assign_run, a);
      if (w->one_shot)
        announce(self, *w);
    },
    [=](atoms::stop, const std::string& run_id, bool interrupt) {
      auto& st = self->state;
      auto i = st.runs.find(run_id);
      if (i == st.runs.end())
        return;
      const auto* w = st.table->by_name(i->second.worker);
      if (w == nullptr || w->status == worker_status::disconnected) {
        // Nobody to tell: the run ends here; its worker, if it comes back, is told no more.
        end_run(self, run_id, interrupt ? run_status::interrupted : run_status::cancelled,
                "worker '" + i->second.worker + "' was not connected when the run was stopped");
        return;
      }
      spdlog::info("run {}: asking worker '{}' to {} it", run_id, w->name,
                   interrupt ? "interrupt" : "cancel");
      reply(self, w->identity, wire::message_type::stop_run, stop_run{run_id, interrupt});
    },
    [=](atoms::tick) {
      auto& st = self->state;
      auto now = now_ms();
      for (const auto& name : st.table->tick(now)) {
        const auto& w = *st.table->by_name(name);
        spdlog::info("worker '{}' is {}{}{}", name, to_string(w.status),
                     w.reason.empty() ? "" : ": ", w.reason);
        announce(self, w);
      }
      // A worker gone longer than the grace period, or one that has not brought back a run the
      // last server left running: those runs end interrupted (seed 001).
      std::vector<std::string> expired;
      for (const auto& [id, run] : st.runs) {
        const auto* w = st.table->by_name(run.worker);
        bool connected = w != nullptr && w->status != worker_status::disconnected;
        auto since = run.adopting_since_ms != 0 ? run.adopting_since_ms
                     : !connected && w != nullptr ? w->disconnected_ms
                                                  : 0;
        if (!connected && since != 0 && now - since > st.resume_grace_ms)
          expired.push_back(id);
      }
      for (const auto& id : expired) {
        auto worker = st.runs[id].worker;
        char grace[32];
        std::snprintf(grace, sizeof grace, "%g s", static_cast<double>(st.resume_grace_ms) / 1000.0);
        end_run(self, id, run_status::interrupted,
                "worker '" + worker + "' was not connected for " + grace
                  + " (CODEFYUI_WORKER_RESUME_GRACE_S), so the run is given up");
      }
      // Agents that did not answer a request for recorded outputs in time.
      for (auto i = st.outputs_waiting.begin(); i != st.outputs_waiting.end();) {
        auto& waiting = i->second;
        auto late = std::stable_partition(waiting.begin(), waiting.end(), [&](const pending_outputs& p) {
          return now - p.asked_ms <= outputs_timeout_ms;
        });
        for (auto p = late; p != waiting.end(); ++p)
          p->promise.deliver(outputs_reply{i->first, false, "",
                                           "worker '" + p->worker + "' did not send run " + i->first
                                             + "'s recorded outputs within "
                                             + std::to_string(outputs_timeout_ms / 1000) + " s",
                                           true});
        waiting.erase(late, waiting.end());
        i = waiting.empty() ? st.outputs_waiting.erase(i) : std::next(i);
      }
      self->delayed_send(self, tick_interval(*self->state.table), atoms::tick::value);
    },
    [=](atoms::drain, const std::string& name, bool draining) {
      // seed 001: "Drain stops new runs from being placed on a worker while its running runs finish".
      auto& table = *self->state.table;
      if (!table.set_draining(name, draining, now_ms()))
        return false;
      const auto& w = *table.by_name(name);
      spdlog::info("worker '{}' {}", name, draining ? "drains: no new runs" : "takes runs again");
      announce(self, w);
      return true;
    },
    [=](atoms::enroll, const std::string& name) { return give_credential(self, name, false); },
    [=](atoms::rekey, const std::string& name) { return give_credential(self, name, true); },
    [=](atoms::remove, const std::string& name) { return remove_worker(self, name); },
    [=](atoms::workers) { return json_text(workers_json(*self->state.table)); },
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
      return json_text(j);
    }
  );
}

} // namespace cdui::actors
