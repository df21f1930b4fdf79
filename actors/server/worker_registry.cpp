#include "actors/server/worker_registry.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/gather.hpp"
#include "actors/common/guarded.hpp"
#include "actors/common/log_limit.hpp"
#include "actors/policy/part_assignment.hpp"
#include "messages/clock.hpp"
#include "messages/atoms.hpp"
#include "messages/run_outcome.hpp"
#include "messages/text.hpp"
#include "storage/credentials.hpp"

namespace cdui::actors {

using policy::worker_table;
using policy::enrollment_rule;
using policy::is_fleet_pattern;
using policy::is_valid_enrollment;

namespace {

using self_ptr = worker_registry_actor::stateful_pointer<worker_registry_state>;

/// How long the registry waits for a proxy's answer to an outputs request: the proxy answers
/// within outputs_timeout_ms (and a tick); past this, the proxy is gone.
constexpr std::int64_t proxy_outputs_deadline_ms = outputs_timeout_ms + 5000;

template <class T>
void reply(self_ptr self, const std::string& identity, wire::message_type type, const T& payload) {
  self->state.bridge->send(identity, type, wire::encode(payload));
}

std::size_t runs_of(const worker_registry_state& st, const std::string& name) {
  return static_cast<std::size_t>(std::count_if(
    st.placed.begin(), st.placed.end(), [&](const auto& p) { return p.second.worker == name; }));
}

/// The registry's own part of the Workers panel: the enrolled names and the refused connections.
/// Each worker's entry is its actor's (status_with_workers).
workers_status status_of(self_ptr self) {
  const auto& table = *self->state.table;
  workers_status out;
  out.mailbox = self->mailbox().size();
  out.heartbeat_ms = table.settings().heartbeat_ms;
  for (const auto& [name, hash] : table.settings().enrolled)
    out.enrolled.push_back({name, table.connected(name) || table.any_connected(name)});
  for (const auto& r : table.refused())
    out.refused_connections.push_back({r.name, r.version, r.reason, r.time_ms});
  out.server_version = table.settings().version;
  out.node_types_digest = table.settings().node_types_digest;
  return out;
}

/// How long a worker's actor has to answer for the Workers panel.
constexpr std::chrono::seconds worker_status_deadline{5};

/// Every worker that joined since the start, each as its actor says (status, heartbeat age, the
/// runs it follows), with the actors' own status for /api/status. A worker whose actor does not
/// answer in time is listed with what its hello said and status "unknown", saying why.
caf::result<workers_status> status_with_workers(self_ptr self) {
  auto table = self->state.table.get();
  return gather_status<worker_proxy_status>(
    self, status_of(self), self->state.proxies, worker_status_deadline,
    [](workers_status& all, worker_proxy_status proxy) {
      if (proxy.joined)
        all.workers.push_back(proxy.entry);
      all.proxies.push_back(std::move(proxy));
    },
    [table](workers_status& all) {
      for (const auto& worker : table->workers()) {
        const auto& name = worker.first;  // not a structured binding: a lambda captures it
        const auto& c = worker.second;
        bool listed = std::any_of(all.workers.begin(), all.workers.end(),
                                  [&](const worker_entry& w) { return w.name == name; });
        if (!listed)
          all.workers.push_back({name, "unknown",
                                 "the server's actor for this worker did not answer within "
                                   + std::to_string(worker_status_deadline.count()) + " s",
                                 c.hello.version, c.hello.env_digest, c.hello.node_types_digest,
                                 c.hello.devices, c.hello.running_runs, c.hello.one_shot, c.enrolled,
                                 c.draining, 0, 0.0, 0});
      }
      std::sort(all.workers.begin(), all.workers.end(),
                [](const worker_entry& a, const worker_entry& b) { return a.name < b.name; });
    });
}

/// The worker's actor; a fresh one, monitored, when it has none (it joins now, or has runs to
/// adopt). `joined`: the connection a replacement takes over from one that died.
worker_proxy_actor& proxy_of(self_ptr self, const std::string& name,
                             const policy::worker_connection* joined = nullptr) {
  auto& st = self->state;
  auto i = st.proxies.find(name);
  if (i != st.proxies.end())
    return i->second;
  worker_setup setup;
  setup.name = name;
  if (joined != nullptr) {
    setup.identity = joined->identity;
    setup.joined = *joined;
  }
  setup.bridge = st.bridge;
  setup.registry = caf::actor_cast<worker_supervisor_actor>(self);
  setup.resume_grace_ms = st.resume_grace_ms;
  setup.server_version = st.table->settings().version;
  setup.health = {st.table->settings().node_types_digest, st.table->settings().heartbeat_ms};
  auto proxy = self->spawn(worker_proxy, std::move(setup));
  self->monitor(proxy);
  return st.proxies.emplace(name, std::move(proxy)).first->second;
}

/// Ends a run no proxy follows (any more), with no event: the run actor adds the end event.
void end_placed(self_ptr self, const std::string& run_id, run_status status, const std::string& why) {
  auto i = self->state.placed.find(run_id);
  if (i == self->state.placed.end())
    return;
  caf::anon_send(i->second.run, atoms::finished::value, run_outcome{status, why, "{}"});
  self->state.placed.erase(i);
}

void on_hello(self_ptr self, const std::string& identity, const hello& h) {
  auto& st = self->state;
  auto& table = *st.table;
  auto verdict = table.hello(identity, h, now_ms());
  if (!verdict.accepted) {
    auto n = ++st.refused_hellos;
    if (worth_logging(n))
      spdlog::warn("refused agent {} (cdui {}; {} refused so far): {}", text::quoted(h.name),
                   text::quoted(h.version), n, verdict.reason);
    reply(self, identity, wire::message_type::refused, refused{verdict.reason, false});
    return;
  }
  if (verdict.replaced_identity)
    reply(self, *verdict.replaced_identity, wire::message_type::refused,
          refused{"a newer agent connected as worker '" + h.name + "'", false});
  const auto& c = *table.by_name(h.name);
  // Its actor welcomes it, ends the runs it no longer has (they are not its any more, and it
  // releases them) and says whether its slots are open.
  self->send(proxy_of(self, h.name), atoms::join::value, worker_join{identity, h, c.enrolled, c.draining});
}

/// A message from an agent about its runs, to its worker's proxy; nothing when the connection is
/// no worker's.
template <class T>
bool route(self_ptr self, const std::string& identity, const T& msg) {
  const auto* name = self->state.table->by_identity(identity);
  if (name == nullptr)
    return false;
  self->send(proxy_of(self, *name), atoms::wire_in::value, identity, msg);
  return true;
}

/// A new credential for `name` (enroll, or re-key when `rekey`), its hash in cdui.db.
enrollment give_credential(self_ptr self, const std::string& name, bool rekey) {
  auto& st = self->state;
  enrollment e{name, "", "", ""};
  if (!is_valid_enrollment(name)) {
    e.error = "field 'name': " + text::quoted(name) + " is not a worker name or a fleet's pattern ("
              + enrollment_rule + ")";
    e.refusal = "invalid";
    return e;
  }
  bool enrolled = st.table->is_enrolled(name);
  if (!rekey && enrolled) {
    e.error = "worker '" + name + "' is enrolled already; re-key it with `cdui workers rekey " + name
              + "` for a new credential";
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

/// A removed worker's connection is refused for good, the runs it executes end failed (and are
/// stopped there) and the runs waiting for it fail, with `reason`.
void forget_worker(self_ptr self, const std::string& name, const std::string& reason) {
  auto& st = self->state;
  auto runs = runs_of(st, name);
  for (auto i = st.placed.begin(); i != st.placed.end();)
    i = i->second.worker == name ? st.placed.erase(i) : std::next(i);
  if (auto i = st.proxies.find(name); i != st.proxies.end()) {
    // It stops and fails its runs, refuses the connection and quits: an end the registry expects.
    self->demonitor(i->second.address());
    self->send(i->second, atoms::remove::value, reason);
    st.proxies.erase(i);
  }
  if (st.queue)
    self->send(st.queue, atoms::worker_gone::value, name, reason);
  spdlog::info("{}: {} run(s) it executed failed", reason, runs);
}

/// An operator removed the worker: its enrollment goes and it is forgotten (forget_worker). A
/// fleet's pattern: its credential joins no more, and each worker that joined by it is removed.
enrollment remove_worker(self_ptr self, const std::string& name) {
  auto& st = self->state;
  enrollment e{name, "", "", ""};
  bool fleet = is_fleet_pattern(name);
  auto members = fleet ? st.table->joined_by(name) : std::vector<std::string>{};
  if (!st.table->remove(name)) {
    e.error = fleet ? "no fleet '" + name + "' is enrolled"
                    : "no worker named '" + name + "' is enrolled or has connected to this server";
    e.refusal = "unknown";
    return e;
  }
  st.store->remove_worker(name);
  if (!fleet) {
    forget_worker(self, name, "worker '" + name + "' was removed by an operator");
    return e;
  }
  spdlog::info("fleet '{}' removed: its credential no longer joins; {} worker(s) joined by it", name,
               members.size());
  for (const auto& member : members) {
    st.table->remove(member);
    forget_worker(self, member, "worker '" + member + "' was removed by an operator, with its fleet '" + name + "'");
  }
  return e;
}

/// A proxy ended that was not told to: the runs it followed cannot be followed any more (their
/// cursors went with it), so they end failed, with the reason, and the agent is told to stop them.
/// The worker stays: a fresh proxy takes its connection (and its hello's facts) from the table, and
/// its agent, which keeps its heartbeats, is told to forget those runs at its next hello.
void proxy_down(self_ptr self, const caf::down_msg& down) {
  auto& st = self->state;
  auto i = std::find_if(st.proxies.begin(), st.proxies.end(),
                        [&](const auto& p) { return p.second.address() == down.source; });
  if (i == st.proxies.end())
    return;  // removed, and told to quit
  auto name = i->first;
  st.proxies.erase(i);
  auto reason = "the server's actor for worker '" + name + "' ended unexpectedly ("
                + caf::to_string(down.reason) + "); the run's events can no longer be followed, so "
                "it is failed and stopped on the worker";
  const auto* c = st.table->by_name(name);
  std::vector<std::string> ids;
  for (const auto& [id, run] : st.placed)
    if (run.worker == name)
      ids.push_back(id);
  for (const auto& id : ids) {
    if (c != nullptr && !c->identity.empty())
      reply(self, c->identity, wire::message_type::stop_run, stop_run{id, true});
    end_placed(self, id, run_status::failed, reason);
  }
  spdlog::error("worker registry: the actor of worker '{}' ended unexpectedly ({}); {} run(s) it "
                "followed failed; a fresh one takes its place",
                name, caf::to_string(down.reason), ids.size());
  if (c != nullptr)
    proxy_of(self, name, c);  // it says whether the worker's slots are open
}

caf::result<outputs_reply> ask_outputs(self_ptr self, const std::string& run_id,
                                       const std::string& worker) {
  auto& st = self->state;
  if (!st.table->connected(worker))
    return outputs_reply{run_id, false, "",
                         "worker '" + worker + "' is not connected; run " + run_id
                           + "'s recorded outputs stay on it, and can be read while it is",
                         true};
  auto rp = self->make_response_promise<outputs_reply>();
  self->request(proxy_of(self, worker), std::chrono::milliseconds(proxy_outputs_deadline_ms),
                atoms::outputs::value, run_id)
    .then([rp](outputs_reply& r) mutable { rp.deliver(std::move(r)); },
          [rp, run_id, worker](caf::error& e) mutable {
            // Its proxy died holding the request.
            rp.deliver(outputs_reply{run_id, false, "",
                                     "the server's actor for worker '" + worker + "' did not answer"
                                       " for run " + run_id + "'s recorded outputs ("
                                       + caf::to_string(e) + ")",
                                     true});
          });
  return rp;
}

} // namespace

worker_registry_actor::behavior_type worker_registry(self_ptr self, worker_table::config cfg,
                                                     std::shared_ptr<zmq_bridge> bridge,
                                                     std::shared_ptr<storage::run_store> store,
                                                     std::int64_t resume_grace_ms) {
  for (const auto& w : store->enrolled_workers())
    cfg.enrolled[w.name] = w.credential_hash;
  self->state.table = std::make_unique<worker_table>(std::move(cfg));
  self->state.bridge = std::move(bridge);
  self->state.store = std::move(store);
  self->state.resume_grace_ms = resume_grace_ms;
  self->set_down_handler([=](caf::down_msg& down) { proxy_down(self, down); });
  return guarded_typed_behavior<worker_registry_actor>(
    "worker registry",
    [=](atoms::released, const std::string& run_id, const std::string& worker) {
      auto i = self->state.placed.find(run_id);
      if (i != self->state.placed.end() && i->second.worker == worker)
        self->state.placed.erase(i);
    },
    [=](atoms::worker_update, const std::string& name, const std::vector<device_offer>& devices,
        worker_availability availability, bool one_shot) {
      // From a worker's actor, for the run queue: only the worker's current actor speaks for it.
      auto i = self->state.proxies.find(name);
      if (self->state.queue && i != self->state.proxies.end()
          && i->second.address() == self->current_sender())
        self->send(self->state.queue, atoms::worker_update::value, name, devices, availability,
                   one_shot);
    },
    [=](atoms::worker_lost, const std::string& name, const std::string& identity) {
      self->state.table->lost(name, identity);
    },
    [=](atoms::wire_in, const std::string& identity, const hello& h) { on_hello(self, identity, h); },
    [=](atoms::wire_in, const std::string& identity, const heartbeat& h) {
      if (!route(self, identity, h))
        // A server that restarted, or a connection it gave up: the agent says hello again.
        reply(self, identity, wire::message_type::refused,
              refused{"this server does not know this connection; say hello again", true});
    },
    [=](atoms::wire_in, const std::string& identity, const run_update& u) {
      if (!route(self, identity, u))
        spdlog::warn("worker registry: a report on run {} from a connection that was not given it",
                     u.run_id);
    },
    [=](atoms::wire_in, const std::string& identity, const run_done& d) { route(self, identity, d); },
    [=](atoms::wire_in, const std::string& identity, const outputs_reply& r) { route(self, identity, r); },
    [=](atoms::wire_in, const std::string& identity, const goodbye& g) {
      // Not a worker's connection (any more): nothing to mark, but the agent may stop now.
      if (!route(self, identity, g))
        reply(self, identity, wire::message_type::goodbye, g);
    },
    [=](atoms::outputs, const std::string& run_id, const std::string& worker) {
      return ask_outputs(self, run_id, worker);
    },
    [=](atoms::attach, const run_queue_actor& queue) { self->state.queue = queue; },
    [=](atoms::adopt, const std::string& run_id, const std::string& worker, const caf::actor& run,
        std::uint64_t cursor) {
      // Answered once the worker's actor has it before it: a hello that reaches this registry
      // after the answer reaches that actor after the adoption.
      self->state.placed[run_id] = placed_run{worker, run};
      self->send(proxy_of(self, worker), atoms::adopt::value, run_id, run, cursor);
      return true;
    },
    [=](atoms::assign, assign_run& a, const std::string& worker, const caf::actor& run) {
      auto& st = self->state;
      // Late or drained since the run was admitted, it is still connected: the run goes to it (a
      // drain lets admitted runs finish; a worker that is really gone ends it after the grace).
      if (auto why = policy::assignment_refusal(*st.table, a, worker)) {
        caf::anon_send(run, atoms::finished::value, run_outcome{run_status::failed, *why, "{}"});
        return;
      }
      st.placed[a.run_id] = placed_run{worker, run};
      self->send(proxy_of(self, worker), atoms::assign::value, std::move(a), run);
    },
    [=](atoms::stop, const std::string& run_id, bool interrupt) {
      self->send(self, atoms::stop::value, run_id, interrupt, false);
    },
    [=](atoms::stop, const std::string& run_id, bool interrupt, bool wait_for_worker) {
      auto i = self->state.placed.find(run_id);
      if (i != self->state.placed.end())
        self->send(proxy_of(self, i->second.worker), atoms::stop::value, run_id, interrupt, wait_for_worker);
    },
    [=](atoms::drain, const std::string& name, bool draining) -> caf::result<bool> {
      // Drain stops new runs from being placed on a worker while its running runs finish
      // (docs/workers.md, "Drain and undrain").
      if (!self->state.table->set_draining(name, draining))
        return false;
      spdlog::info("worker '{}' {}", name, draining ? "drains: no new runs" : "takes runs again");
      // Answered once the proxy's worker_update (sent before its reply) went on to the run queue:
      // a run submitted after `cdui workers drain` returns is never placed on the worker.
      auto rp = self->make_response_promise<bool>();
      self->request(proxy_of(self, name), caf::infinite, atoms::drain::value, draining)
        .then([rp](bool) mutable { rp.deliver(true); },
              [rp](caf::error&) mutable { rp.deliver(true); });
      return rp;
    },
    [=](atoms::enroll, const std::string& name) { return give_credential(self, name, false); },
    [=](atoms::rekey, const std::string& name) { return give_credential(self, name, true); },
    [=](atoms::remove, const std::string& name) { return remove_worker(self, name); },
    [=](atoms::status) { return status_with_workers(self); },
    [=](atoms::proxy_of, const std::string& name) {
      auto i = self->state.proxies.find(name);
      return i != self->state.proxies.end() ? i->second : worker_proxy_actor{};
    }
  );
}

} // namespace cdui::actors
