// The run queue's part that ends runs no actor will end: a restart's unfinished runs
// (policy::recovery_plan) and runs whose actor died. See run_queue_parts.hpp.
#include "actors/server/run_queue_parts.hpp"

#include <algorithm>
#include <memory>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/policy/recovery_plan.hpp"
#include "messages/atoms.hpp"
#include "messages/clock.hpp"
#include "messages/json_text.hpp"
#include "messages/stop_reason.hpp"

namespace cdui::actors {

using namespace queue_parts;

namespace {

/// Ends a run that has no actor in the store: its end event, then its status. A restart's
/// bookkeeping ends its runs with execution_stopped {reason} (the run never got to an error of its
/// own); a run whose actor died, with execution_error {kind, error}.
enum class end_event { stopped, error };

void end_in_store(run_queue_state& st, run_info info, storage::run_directory* dir,
                  run_status status, const std::string& reason, end_event event) {
  if (event == end_event::error)
    append_stored_event(*st.cfg.store, dir, info.id, "execution_error",
                        json_text(nlohmann::json{{"kind", "error"}, {"error", reason}}));
  else  // left running: interrupted; not queued again: failed, never placed
    append_stored_event(
      *st.cfg.store, dir, info.id, "execution_stopped",
      json_text(stopped_data(status == run_status::failed ? stop_reason::not_placed : stop_reason::interrupted,
                             reason)));
  info.status = status;
  info.error = reason;
  info.finished_ms = now_ms();
  info.queue_position = 0;
  st.cfg.store->update(info);
}

} // namespace

void queue_parts::resume(self_ptr self) {
  auto& st = self->state;
  auto unfinished = st.cfg.store->unfinished();
  std::vector<run_info> infos;
  for (const auto& run : unfinished)
    infos.push_back(run.info);
  auto plan = policy::recovery_plan(infos, static_cast<bool>(st.registry));
  for (std::size_t i = 0; i < plan.size(); ++i) {
    auto& step = plan[i];
    const auto& stored = unfinished[i];
    // A queued run has no folder (it is made when the run starts), unless an older server made it.
    auto dir = storage::existing_run_directory(st.cfg.home, stored.info.id, stored.graph_json);
    if (step.what == policy::recovery_step::action::end) {
      end_in_store(st, stored.info, dir.get(), step.status, step.reason, end_event::stopped);
      continue;
    }
    step.request.graph_json = stored.graph_json;
    auto prepared = prepare_run(st, step.request, true);
    if (auto* refusal = std::get_if<submit_result>(&prepared)) {
      end_in_store(st, stored.info, dir.get(), run_status::failed,
                   policy::not_requeued + refusal->error, end_event::stopped);
      continue;
    }
    auto& p = std::get<prepared_run>(prepared);
    p.setup.info = stored.info;
    p.setup.dir = std::move(dir);
    p.setup.context.run_dir = st.cfg.home / "runs" / stored.info.id;
    if (step.what == policy::recovery_step::action::requeue) {
      launch(self, std::move(p), step.request);
      continue;
    }
    // A worker run that was running: its actor starts as running, it holds its slots, and the
    // registry waits for its worker to report it (or ends it after the grace period).
    auto id = p.setup.info.id;
    auto worker = p.setup.worker;
    // The worker's own cursor: how many of its events the store has (none: it may never have had
    // the run, whose assignment a killed server did not send).
    auto last = st.cfg.store->last_cursor(id);
    auto cursor = last - std::min(last, st.cfg.store->worker_cursor_base(id));
    p.setup.context.run_id = id;
    bool across_workers = !p.setup.parts.empty();
    auto run = spawn_run(self, std::move(p.setup));
    auto& record = st.runs.at(run_id{id});
    note_budget(record, p, step.request);  // on a shared card it counts as running at once
    st.runs.start(record, now_ms());
    record.remote = true;
    st.slots.hold(id, p.keys);
    caf::anon_send(st.registry, atoms::adopt::value, id, worker, run, cursor);
    if (across_workers) {
      // A DDP run across workers: its other workers' parts too, before any agent is let in.
      ++st.parts_adopting;
      auto followed = [self]() {
        auto& s = self->state;
        if (--s.parts_adopting != 0)
          return;
        for (auto& waiting : s.parts_adopted)
          waiting.deliver(true);
        s.parts_adopted.clear();
      };
      self->request(run, request_deadline, atoms::adopt::value)
        .then([followed](bool) { followed(); }, [followed](caf::error&) { followed(); });
    }
  }
  pump(self);
}

void queue_parts::stop_runs(self_ptr self) {
  auto& st = self->state;
  auto ignore_error = [](caf::error&) {};
  std::vector<std::string> left;
  for (const auto& [key, run] : st.runs) {
    const auto& id = key.str();
    if (run.remote)
      continue;  // it goes on on its worker; the next server adopts it
    if (run.started)
      self->request(run.actor, request_deadline, atoms::interrupt::value).then([](bool) {}, ignore_error);
    else if (st.cfg.resume)
      left.push_back(id);
    else if (st.slots.remove(id) || remove_floating(st, id))
      self->request(run.actor, request_deadline, atoms::cancel::value, true).then([](bool) {}, ignore_error);
  }
  // A run left for the next start ends with this process. Its actor quits now, forgotten first
  // so that its end is not taken for a failure: one that someone waits for (a sweep, `cdui wait`)
  // holds its waiters' promises, and would keep the actor system from ending.
  for (const auto& id : left) {
    auto run = st.runs.at(run_id{id}).actor;
    forget(self, id);
    caf::anon_send(run, atoms::quit::value);
  }
}

void queue_parts::run_actor_down(self_ptr self, const caf::down_msg& down) {
  auto& st = self->state;
  auto* run = st.runs.by_actor(down.source.id());
  if (!run)
    return;  // it quit after its run ended, as told
  auto id = run->id.str();
  auto reason = "the run's actor ended unexpectedly (" + caf::to_string(down.reason)
                + "); the run is failed and its slots are freed";
  spdlog::error("run {}: {}", id, reason);
  if (run->remote && st.registry)
    caf::anon_send(st.registry, atoms::stop::value, id, false);
  st.slots.remove(id);
  remove_floating(st, id);
  if (auto stored = st.cfg.store->find(id); stored && !is_final(stored->info.status)) {
    auto dir = storage::existing_run_directory(st.cfg.home, id, stored->graph_json);
    end_in_store(st, stored->info, dir.get(), run_status::failed, reason, end_event::error);
  }
  forget(self, id);
}

} // namespace cdui::actors
