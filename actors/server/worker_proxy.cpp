#include "actors/server/worker_proxy.hpp"
#include "actors/server/worker_proxy_parts.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/deadlines.hpp"
#include "actors/common/env_settings.hpp"
#include "actors/common/guarded.hpp"
#include "messages/clock.hpp"
#include "messages/run_outcome.hpp"
#include "messages/stop_reason.hpp"

namespace cdui::actors {

using namespace proxy_parts;

namespace proxy_parts {

/// Whether the worker's slots admit runs now, and if not, why. A one-shot worker executes a single
/// run, then its agent exits: once it has one, it is closed.
worker_availability availability(const worker_proxy_state& st) {
  if (!st.health)
    return worker_availability::disconnected;
  const auto& w = st.health->record();
  auto health = st.health->availability();
  bool busy_one_shot = w.one_shot && (!w.running_runs.empty() || !st.runs.empty());
  return health == worker_availability::open && busy_one_shot ? worker_availability::busy_one_shot
                                                              : health;
}

/// Tells the registry (and through it the run queue) whether the worker's slots admit runs.
void announce(self_ptr self) {
  const auto& st = self->state;
  if (!st.health)
    return;
  const auto& w = st.health->record();
  self->send(st.setup.registry, atoms::worker_update::value, st.setup.name, w.devices,
             availability(st), w.one_shot);
}

void log_status(const policy::worker_record& w) {
  spdlog::info("worker '{}' is {}{}{}", w.name, to_string(w.status), w.reason.empty() ? "" : ": ",
               w.reason);
}

} // namespace proxy_parts

namespace {

/// An accepted hello: its status starts again from it, and the welcome has the runs it still has
/// resumed from where the server's record of them ends (or adopted after a server restart) and
/// any other forgotten; runs it was given and no longer has end failed.
void on_join(self_ptr self, const std::string& identity, const hello& h, bool enrolled,
             bool draining) {
  auto& st = self->state;
  st.setup.identity = identity;
  st.setup.disconnected_ms = 0;
  st.health.emplace(st.setup.health, h, enrolled, draining, now_ms());
  const auto& w = st.health->record();
  spdlog::info("worker '{}' joined ({} devices, status {}{}{})", h.name, h.devices.size(),
               to_string(w.status), w.reason.empty() ? "" : ": ", w.reason);
  welcome answer{st.setup.server_version, static_cast<std::uint32_t>(st.setup.health.heartbeat_ms), {}, {}};
  std::set<std::string> listed{h.running_runs.begin(), h.running_runs.end()};
  for (const auto& id : h.running_runs) {
    auto i = st.runs.find(id);
    if (i != st.runs.end()) {
      answer.resume.push_back({id, i->second.cursor});
      if (i->second.adopting_since_ms != 0)
        spdlog::info("run {} adopted: worker '{}' still executes it", id, h.name);
      i->second.adopting_since_ms = 0;
    } else {
      answer.forget.push_back(id);
    }
  }
  // Runs it was given and no longer has. One it has sent no event of never reached it (its
  // assign_run was lost: the server that sent it was killed, or the connection went): its run
  // actor sends it again. The others' process ended while the connection was down.
  std::vector<std::string> lost;
  std::vector<caf::actor> never_reached;
  for (auto& [id, run] : st.runs) {
    if (listed.count(id))
      continue;
    if (run.cursor == 0) {
      spdlog::info("run {} never reached worker '{}': it is sent again", id, h.name);
      run.adopting_since_ms = 0;
      never_reached.push_back(run.run);
    } else {
      lost.push_back(id);
    }
  }
  reply(self, wire::message_type::welcome, answer);
  // A stop it may not have had (asked while it was away), or lost (its agent restarted since).
  for (const auto& r : answer.resume)
    if (const auto& asked = st.runs.at(r.run_id).stop_asked)
      reply(self, wire::message_type::stop_run, stop_run{r.run_id, *asked});
  for (const auto& run : never_reached)
    caf::anon_send(run, atoms::assign::value);
  for (const auto& id : lost)
    end_run(self, id, run_status::failed,
            "worker '" + h.name + "' came back without the run: its process ended while the "
            "worker was not connected, and its end was not reported");
  announce(self);
}

/// A heartbeat on the worker's connection starts its deadline again; one on a connection that is
/// not its own (replaced, or given up) is asked for a hello.
void on_heartbeat(self_ptr self, const std::string& identity, const heartbeat& h) {
  auto& st = self->state;
  if (!st.health || identity != st.setup.identity) {
    send_to(self, identity, wire::message_type::refused,
            refused{"this server does not know this connection; say hello again", true});
    return;
  }
  st.health->heartbeat(h, now_ms());
  // Every heartbeat: whether its slots are open, and its cards' memory for the memory ledger.
  announce(self);
}

/// Its status over time: late heartbeats make it Degraded, then Disconnected; then its connection
/// is given up (the registry stops routing it here) and its runs wait for the resume grace.
void check_heartbeats(self_ptr self, std::int64_t now) {
  auto& st = self->state;
  if (!st.health || !st.health->tick(now))
    return;
  const auto& w = st.health->record();
  log_status(w);
  if (w.status == policy::worker_status::disconnected && connected(st)) {
    self->send(st.setup.registry, atoms::worker_lost::value, st.setup.name, st.setup.identity);
    st.setup.identity.clear();
    st.setup.disconnected_ms = w.disconnected_ms;
  }
  announce(self);
}

/// The agent stops: the worker is Disconnected now, not once its heartbeats are missed. Its runs go
/// on as after a lost connection (they wait for the resume grace), unless its machine leaves with
/// it (`leaving`): then they end interrupted now, with the agent's reason (worker_left). The agent
/// hears its goodbye back.
void on_goodbye(self_ptr self, const std::string& identity, const goodbye& g) {
  auto& st = self->state;
  if (!st.health || identity != st.setup.identity) {
    send_to(self, identity, wire::message_type::goodbye, g);
    return;
  }
  if (g.leaving) {
    std::vector<std::string> ids;
    for (const auto& [id, run] : st.runs)
      ids.push_back(id);
    for (const auto& id : ids)
      end_run(self, id, run_status::interrupted,
              "worker '" + st.setup.name + "' left with its machine"
                + (g.reason.empty() ? std::string{} : " (" + g.reason + ")") + ", so the run is interrupted",
              stop_reason::worker_left);
  }
  send_to(self, identity, wire::message_type::goodbye, g);
  auto now = now_ms();
  st.health->lose(std::string{g.leaving ? "its agent stopped and its machine left" : "its agent stopped"}
                    + (g.reason.empty() ? std::string{} : " (" + g.reason + ")"),
                  now);
  log_status(st.health->record());
  self->send(st.setup.registry, atoms::worker_lost::value, st.setup.name, st.setup.identity);
  st.setup.identity.clear();
  st.setup.disconnected_ms = now;
  announce(self);
}

void on_tick(self_ptr self) {
  auto& st = self->state;
  auto now = now_ms();
  self->delayed_send(self, std::chrono::milliseconds(worker_tick_ms(st.setup.health.heartbeat_ms)),
                     atoms::tick::value);
  check_heartbeats(self, now);
  // Gone longer than the grace period, or not back with a run the last server left running:
  // those runs end interrupted (docs/workers.md, "Lost connections and the resume grace").
  std::vector<std::string> expired;
  for (const auto& [id, run] : st.runs) {
    auto since = run.adopting_since_ms != 0 ? run.adopting_since_ms : st.setup.disconnected_ms;
    if (!connected(st) && since != 0 && now - since > st.setup.resume_grace_ms)
      expired.push_back(id);
  }
  for (const auto& id : expired) {
    end_run(self, id, run_status::interrupted,
            "worker '" + st.setup.name + "' was not connected for " + seconds_text(st.setup.resume_grace_ms)
              + " s (CODEFYUI_WORKER_RESUME_GRACE_S), so the run is given up",
            stop_reason::given_up);
  }
  // An agent that did not answer a request for recorded outputs in time.
  for (auto i = st.outputs_waiting.begin(); i != st.outputs_waiting.end();) {
    auto& waiting = i->second;
    auto late = std::stable_partition(waiting.begin(), waiting.end(), [&](const pending_outputs& p) {
      return now - p.asked_ms <= outputs_timeout_ms;
    });
    for (auto p = late; p != waiting.end(); ++p)
      p->promise.deliver(outputs_reply{i->first, false, "",
                                       "worker '" + st.setup.name + "' did not send run " + i->first
                                         + "'s recorded outputs within "
                                         + std::to_string(outputs_timeout_ms / 1000) + " s",
                                       true});
    waiting.erase(late, waiting.end());
    i = waiting.empty() ? st.outputs_waiting.erase(i) : std::next(i);
  }
}

worker_proxy_status status_of(self_ptr self) {
  const auto& st = self->state;
  worker_proxy_status out;
  out.worker = st.setup.name;
  out.mailbox = self->mailbox().size();
  out.connected = connected(st);
  out.disconnected_ms = st.setup.disconnected_ms;
  for (const auto& [id, run] : st.runs)
    out.runs.push_back({id, run.cursor, run.adopting_since_ms != 0});
  for (const auto& [id, waiting] : st.outputs_waiting)
    out.outputs_waiting += waiting.size();
  if (st.health) {
    const auto& w = st.health->record();
    out.joined = true;
    out.entry = {w.name, std::string{to_string(w.status)}, w.reason, w.version, w.env_digest,
                 w.node_types_digest, w.devices, w.running_runs, w.one_shot, w.enrolled, w.draining,
                 w.connected_ms, static_cast<double>(now_ms() - w.last_heartbeat_ms) / 1000.0,
                 st.runs.size()};
  }
  return out;
}

/// A worker's actor that takes the place of one that died: the worker's status starts again
/// from its hello, now, as if it had just said it; without a connection it is Disconnected.
void take_over(self_ptr self, const policy::worker_connection& c) {
  auto& st = self->state;
  auto now = now_ms();
  st.health.emplace(st.setup.health, c.hello, c.enrolled, c.draining, now);
  if (!connected(st)) {
    st.health->lose("it was not connected when the server's actor for it was replaced", now);
    st.setup.disconnected_ms = now;
  }
  announce(self);
}

} // namespace

std::int64_t worker_tick_ms(std::int64_t heartbeat_ms) {
  return std::clamp<std::int64_t>(heartbeat_ms / 4, 10, 1000);
}

worker_proxy_actor::behavior_type worker_proxy(self_ptr self, worker_setup setup) {
  self->state.setup = std::move(setup);
  if (self->state.setup.joined)
    take_over(self, *self->state.setup.joined);
  self->send(self, atoms::tick::value);
  // It ends with its registry, whatever the reason: nobody else routes it messages.
  self->monitor(self->state.setup.registry);
  self->set_down_handler([=](const caf::down_msg& down) {
    if (down.source == self->state.setup.registry.address())
      self->quit(down.reason);
  });
  return guarded_typed_behavior<worker_proxy_actor>(
    "worker",
    [=](atoms::join, const worker_join& j) { on_join(self, j.identity, j.greeting, j.enrolled, j.draining); },
    [=](atoms::wire_in, const std::string& identity, const heartbeat& h) {
      on_heartbeat(self, identity, h);
    },
    [=](atoms::wire_in, const std::string&, const run_update& u) { on_run_update(self, u); },
    [=](atoms::wire_in, const std::string&, const run_done& d) { on_run_done(self, d); },
    [=](atoms::wire_in, const std::string& identity, const goodbye& g) {
      on_goodbye(self, identity, g);
    },
    [=](atoms::wire_in, const std::string&, const outputs_reply& r) {
      auto& st = self->state;
      auto i = st.outputs_waiting.find(r.run_id);
      if (i == st.outputs_waiting.end())
        return;
      for (auto& p : i->second)
        p.promise.deliver(r);
      st.outputs_waiting.erase(i);
    },
    [=](atoms::drain, bool draining) {
      // The reply follows the announcement, so whoever waits on it finds the queue told.
      if (!self->state.health)
        return true;
      self->state.health->set_draining(draining, now_ms());
      announce(self);
      return true;
    },
    [=](atoms::assign, assign_run& a, const caf::actor& run) { on_assign(self, a, run); },
    [=](atoms::adopt, const std::string& run_id, const caf::actor& run, std::uint64_t cursor) {
      self->state.runs[run_id] = remote_run{run, cursor, now_ms(), std::nullopt, 0};
    },
    [=](atoms::stop, const std::string& run_id, bool interrupt, bool wait_for_worker) {
      on_stop(self, run_id, interrupt, wait_for_worker);
    },
    [=](atoms::outputs, const std::string& run_id) -> caf::result<outputs_reply> {
      auto& st = self->state;
      if (!connected(st))
        return outputs_reply{run_id, false, "",
                             "worker '" + st.setup.name + "' is not connected; run " + run_id
                               + "'s recorded outputs stay on it, and can be read while it is",
                             true};
      auto rp = self->make_response_promise<outputs_reply>();
      st.outputs_waiting[run_id].push_back({rp, now_ms()});
      reply(self, wire::message_type::outputs_request, outputs_request{run_id});
      return rp;
    },
    [=](atoms::remove, const std::string& reason) { on_remove(self, reason); },
    [=](atoms::tick) { on_tick(self); },
    [=](atoms::status) { return status_of(self); }
  );
}

} // namespace cdui::actors
