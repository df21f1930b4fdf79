// The worker proxy's runs (actors/server/worker_proxy.*): the runs it was given, followed through
// the agent's updates to their ends, stopped, sent, and ended here when the worker cannot.
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/deadlines.hpp"
#include "actors/server/worker_proxy_parts.hpp"
#include "messages/clock.hpp"
#include "messages/run_outcome.hpp"

namespace cdui::actors::proxy_parts {

/// Asks the agent to send the run's events again after what the server has; at most once a
/// second for the same cursor (the request, or the replay, may be lost too).
constexpr std::int64_t resend_again_ms = 1000;

void ask_resend(self_ptr self, const std::string& run_id, remote_run& run) {
  auto now = now_ms();
  if (run.resend_asked == run.cursor && now - run.resend_asked_ms < resend_again_ms)
    return;
  run.resend_asked = run.cursor;
  run.resend_asked_ms = now;
  reply(self, wire::message_type::resend, run_cursor{run_id, run.cursor});
}

/// The run, when this worker was given it: a worker reports on its own runs only.
remote_run* run_of(self_ptr self, const std::string& run_id) {
  auto i = self->state.runs.find(run_id);
  if (i == self->state.runs.end()) {
    spdlog::warn("worker registry: a report on run {} from a connection that was not given it",
                 run_id);
    return nullptr;
  }
  return &i->second;
}

/// Forgets the run and tells the registry, which routes to this proxy by run id.
void release(self_ptr self, const std::string& run_id) {
  self->state.runs.erase(run_id);
  self->send(self->state.setup.registry, atoms::released::value, run_id, self->state.setup.name);
}

/// Ends a run here; the run actor adds its end event, execution_stopped with `stopped` as its
/// word for a cancelled or interrupted one (a cancel's or the server's stop by default).
void end_run(self_ptr self, const std::string& run_id, run_status status, const std::string& why,
             std::optional<stop_reason> stopped) {
  auto i = self->state.runs.find(run_id);
  if (i == self->state.runs.end())
    return;
  caf::anon_send(i->second.run, atoms::finished::value, run_outcome{status, why, "{}"},
                 stopped.value_or(stop_reason_of(status)));
  release(self, run_id);
}

void on_run_update(self_ptr self, const run_update& u) {
  auto* run = run_of(self, u.run_id);
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
    caf::anon_send(run->run, atoms::append::value, std::move(fresh));
  }
  if (gap)
    ask_resend(self, u.run_id, *run);
}

void on_run_done(self_ptr self, const run_done& d) {
  if (auto* run = run_of(self, d.run_id)) {
    if (run->cursor < d.last_cursor) {
      // Not every event is here yet: they come again, then the end.
      ask_resend(self, d.run_id, *run);
      return;
    }
    // The agent forgets the run once it has the acknowledgement, so it goes only once the run
    // actor has written the end to the store: a server killed in between hears of the end again
    // from the agent after its restart, instead of finding the run gone from the worker. (A run
    // actor that has ended meanwhile recorded its end already.)
    auto id = d.run_id;
    self->request(run->run, caf::duration{request_deadline}, atoms::finished::value, d.outcome)
      .then([self, id]() { reply(self, wire::message_type::run_ack, run_ack{id}); },
            [self, id](caf::error&) { reply(self, wire::message_type::run_ack, run_ack{id}); });
    release(self, d.run_id);
    return;
  }
  // Not this server's to record (it ended here already): the agent may forget it.
  reply(self, wire::message_type::run_ack, run_ack{d.run_id});
}

void on_assign(self_ptr self, assign_run& a, const caf::actor& run) {
  auto& st = self->state;
  // A run sent again (its worker came back without it) keeps the events it has had since.
  auto& followed = st.runs[a.run_id];
  if (followed.run != run)
    followed = remote_run{run, 0, 0, std::nullopt, 0};
  if (followed.stop_asked) {
    // A part asked to stop before it reached its worker (it was away): it never starts.
    auto interrupt = *followed.stop_asked;
    end_run(self, a.run_id, interrupt ? run_status::interrupted : run_status::cancelled,
            "it was stopped before it reached worker '" + st.setup.name + "'", std::nullopt);
    return;
  }
  if (!connected(st) && a.ddp.first_rank > 0) {
    // A part of a DDP run across workers waits for its worker, as the run's other parts go on:
    // sent when it is back (on_join), given up with the worker's other runs after the grace.
    spdlog::info("run {}: worker '{}' is away; its part goes when the worker is back", a.run_id, st.setup.name);
    return;
  }
  if (!connected(st)) {
    // The registry saw it connected; its connection went between.
    end_run(self, a.run_id, run_status::failed,
            "worker '" + st.setup.name + "' went away before the run could be sent to it");
    return;
  }
  spdlog::info("run {} goes to worker '{}' on {}", a.run_id, st.setup.name, a.devices.front());
  reply(self, wire::message_type::assign_run, a);
  if (st.health && st.health->record().one_shot)
    announce(self);  // closed now: it executes this run only
}

void on_stop(self_ptr self, const std::string& run_id, bool interrupt, bool wait_for_worker) {
  auto& st = self->state;
  auto i = st.runs.find(run_id);
  if (i == st.runs.end())
    return;
  i->second.stop_asked = interrupt;
  if (!connected(st) && wait_for_worker) {
    spdlog::info("run {}: worker '{}' is away; it is stopped when it comes back", run_id, st.setup.name);
    return;
  }
  if (!connected(st)) {
    // Nobody to tell: the run ends here; its worker, if it comes back, is told no more.
    end_run(self, run_id, interrupt ? run_status::interrupted : run_status::cancelled,
            "worker '" + st.setup.name + "' was not connected when the run was stopped");
    return;
  }
  spdlog::info("run {}: asking worker '{}' to {} it", run_id, st.setup.name,
               interrupt ? "interrupt" : "cancel");
  reply(self, wire::message_type::stop_run, stop_run{run_id, interrupt});
}

/// An operator removed the worker: its runs are stopped there and end failed, its connection is
/// refused for good, and the proxy quits.
void on_remove(self_ptr self, const std::string& reason) {
  auto& st = self->state;
  std::vector<std::string> ids;
  for (const auto& [id, run] : st.runs)
    ids.push_back(id);
  for (const auto& id : ids) {
    if (connected(st))
      reply(self, wire::message_type::stop_run, stop_run{id, true});
    end_run(self, id, run_status::failed, reason);
  }
  if (connected(st))
    reply(self, wire::message_type::refused, refused{reason, false});
  self->quit();
}

} // namespace cdui::actors::proxy_parts
