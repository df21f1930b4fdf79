#include "actors/server/run_actor.hpp"

#include <chrono>
#include <cstdio>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/common/guarded.hpp"
#include "actors/common/run_process.hpp"
#include "actors/policy/memory_budget.hpp"
#include "actors/policy/run_options.hpp"
#include "messages/run_request.hpp"
#include "messages/clock.hpp"
#include "messages/actor_status.hpp"
#include "messages/atoms.hpp"
#include "messages/json_text.hpp"
#include "messages/run_outcome.hpp"
#include "messages/stop_reason.hpp"
#include "messages/worker.hpp"

namespace cdui::actors {

namespace {

using self_ptr = caf::stateful_actor<run_state>*;

std::atomic<int> abandoned{0};

event_batch events_after(const run_state& st, std::uint64_t cursor) {
  event_batch batch;
  batch.events = st.setup.store->events_after(st.setup.info.id, cursor, max_events_per_answer);
  auto last_read = batch.events.empty() ? cursor : batch.events.back().cursor;
  batch.finished = is_final(st.setup.info.status) && last_read >= st.last_cursor;
  return batch;
}

void wake_waiters(self_ptr self) {
  auto& st = self->state;
  bool ended = is_final(st.setup.info.status);
  std::vector<event_waiter> still;
  for (auto& w : st.waiters) {
    if (w.cursor < st.last_cursor || ended)
      w.promise.deliver(events_after(st, w.cursor));
    else
      still.push_back(std::move(w));
  }
  st.waiters = std::move(still);
  if (ended) {
    for (auto& p : st.end_waiters)
      p.deliver(st.setup.info);
    st.end_waiters.clear();
  }
}

/// A pruned run's execution_stopped: the engine (or the worker's) said `cancelled`, since a prune
/// stops a run as a cancel does; the log says `pruned` and why.
std::string pruned_stop(const std::string& data, const std::string& reason) {
  auto stopped = stopped_reason(nlohmann::json::parse(data, nullptr, false));
  if (stopped && *stopped != stop_reason::cancelled)
    return data;  // a missed stop deadline stays a timeout
  return json_text(stopped_data(stop_reason::pruned, reason));
}

/// Appends events with this run's next cursors; `events` keep their time, or get now when it is 0.
void append_events(self_ptr self, std::vector<run_event> events) {
  auto& st = self->state;
  if (events.empty())
    return;
  auto time = now_ms();
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!st.prune_reason.empty() && events[i].type == "execution_stopped")
      events[i].data = pruned_stop(events[i].data, st.prune_reason);
    events[i].cursor = st.last_cursor + i + 1;
    if (events[i].time_ms == 0)
      events[i].time_ms = time;
    const auto& type = events[i].type;
    if (type == "execution_complete" || type == "execution_error" || type == "execution_stopped")
      st.ended_event = true;
  }
  st.setup.store->append_events(st.setup.info.id, events);
  st.last_cursor = events.back().cursor;
  if (st.setup.dir)
    for (const auto& e : events)
      st.setup.dir->append(e);
}

void append_all(self_ptr self, std::vector<std::pair<std::string, std::string>> items) {
  std::vector<run_event> events;
  for (auto& [type, data] : items)
    events.push_back({0, 0, std::move(type), std::move(data)});
  append_events(self, std::move(events));
}

void append(self_ptr self, const std::string& type, std::string data) {
  append_all(self, {{type, std::move(data)}});
}

/// Stores what the executor has emitted so far.
void flush(self_ptr self) {
  std::vector<std::pair<std::string, std::string>> items;
  {
    std::lock_guard lock{self->state.buffer->mutex};
    items.swap(self->state.buffer->pending);
  }
  append_all(self, std::move(items));
}

/// Records the files a run left in its folder's checkpoints/ as its artifacts.
void record_artifacts(const run_state& st) {
  if (!st.setup.dir)
    return;
  std::error_code ec;
  auto root = st.setup.dir->path();
  for (std::filesystem::recursive_directory_iterator i{st.setup.dir->checkpoints(), ec}, end;
       !ec && i != end; i.increment(ec)) {
    if (i->is_regular_file(ec))
      st.setup.store->add_artifact(
        st.setup.info.id,
        {std::filesystem::relative(i->path(), root, ec).string(), i->file_size(ec)});
  }
}

/// Ends the run with `outcome`; `stopped` is the word of the execution_stopped it adds for a run in
/// a process of its own that ended cancelled or interrupted without its end event.
void finish(self_ptr self, run_outcome outcome, stop_reason stopped) {
  auto& st = self->state;
  if (!st.prune_reason.empty() && outcome.status == run_status::cancelled) {
    outcome.status = run_status::pruned;
    outcome.error = st.prune_reason;
    stopped = stop_reason::pruned;
  }
  if (st.executor.joinable())
    st.executor.join();
  flush(self);
  // A run in a process of its own that ended without its end event (the process crashed, or a
  // worker run the server ended itself: its worker did not come back): every run's log ends with
  // exactly one.
  bool own_process = !st.setup.worker.empty() || !st.setup.exec_binary.empty();
  if (own_process && st.setup.info.status == run_status::running && !st.ended_event) {
    if (outcome.status == run_status::failed)
      append(self, "execution_error",
             json_text(nlohmann::json{{"kind", "error"}, {"error", outcome.error}}));
    else
      append(self, "execution_stopped", json_text(stopped_data(stopped, outcome.error)));
  }
  st.setup.info.status = outcome.status;
  st.setup.info.error = outcome.error;
  st.setup.info.final_metrics = outcome.final_metrics;
  st.setup.info.finished_ms = now_ms();
  st.setup.info.queue_position = 0;
  record_artifacts(st);
  st.setup.store->update(st.setup.info);
  // The queue hears of the end before anyone waiting does, so a question asked after the answer
  // finds the run ended in the queue too (its mailbox is in order).
  self->send(st.queue, atoms::ended::value, st.setup.info.id);
  wake_waiters(self);
}

/// Ends the run with `outcome`; a stop's word is its status's.
void finish(self_ptr self, const run_outcome& outcome) {
  finish(self, outcome, stop_reason_of(outcome.status));
}

/// A worker run: the registry sends it to the worker, whose agent executes it in a subprocess;
/// its events and its end come back as messages from the registry.
void start_remote(self_ptr self) {
  auto& st = self->state;
  if (!st.setup.registry) {
    finish(self, run_outcome{run_status::failed, "this server has no worker registry", "{}"});
    return;
  }
  assign_run a{st.setup.info.id,       st.setup.info.name,  st.setup.graph_json,
               st.setup.info.options, st.setup.worker_devices, st.setup.context.seed};
  self->send(st.setup.registry, atoms::assign::value, std::move(a), st.setup.worker,
             caf::actor_cast<caf::actor>(self));
  wake_waiters(self);
}

/// Makes the run's folder as it starts (a queued run has none: issue 16, many runs queue in a
/// second), with the events it got while queued, so events.jsonl and output.log hold the whole log.
/// The reason when the folder cannot be made; empty when it is there.
std::string make_folder(self_ptr self) {
  auto& st = self->state;
  if (st.setup.dir)
    return "";
  try {
    st.setup.dir = std::make_shared<storage::run_directory>(st.setup.context.run_dir, st.setup.graph_json);
    for (std::uint64_t cursor = 0; cursor < st.last_cursor;) {
      auto queued = st.setup.store->events_after(st.setup.info.id, cursor, max_events_per_answer);
      if (queued.empty())
        break;
      for (const auto& e : queued)
        st.setup.dir->append(e);
      cursor = queued.back().cursor;
    }
  } catch (const std::exception& e) {
    return std::string{"the server cannot make the run's folder: "} + e.what();
  }
  return "";
}

void start(self_ptr self) {
  auto& st = self->state;
  if (auto why = make_folder(self); !why.empty()) {
    append(self, "execution_error", json_text(nlohmann::json{{"kind", "error"}, {"error", why}}));
    finish(self, run_outcome{run_status::failed, why, "{}"});
    return;
  }
  st.setup.info.status = run_status::running;
  st.setup.info.started_ms = now_ms();
  st.setup.info.queue_position = 0;
  if (!st.setup.worker.empty()) {
    // Recorded before the assignment leaves: a server killed in between leaves a running run that
    // its worker never had and sent no event of, which the next server sends again.
    st.setup.store->record_worker_start(st.setup.info, st.last_cursor);
    start_remote(self);
    return;
  }
  st.setup.store->update(st.setup.info);
  auto ctx = st.setup.context;
  ctx.stop = st.stop;
  ctx.interrupt = st.interrupt;
  if (ctx.execution_cache || ctx.weights_persistent || ctx.record_outputs)
    ctx.stores = std::make_shared<store_client>(self->system(), st.setup.stores, st.setup.session,
                                                st.setup.info.id);
  caf::actor me = caf::actor_cast<caf::actor>(self);
  ctx.emit = [me, buffer = st.buffer](const std::string& type, const nlohmann::json& data) {
    bool was_empty = false;
    {
      std::lock_guard lock{buffer->mutex};
      if (buffer->closed)
        return;
      if (type == "node_status" && data.value("status", "") == "running")
        buffer->current_node = "node '" + data.value("node", "") + "' (" + data.value("type", "") + ")";
      was_empty = buffer->pending.empty();
      buffer->pending.emplace_back(type, json_text(data));
    }
    if (was_empty)
      caf::anon_send(me, atoms::flush::value);
  };
  if (!st.setup.exec_binary.empty()) {
    // A process of its own: a crash in it ends this run only, and a stuck one can be killed.
    auto kill_reason = [buffer = st.buffer] {
      std::lock_guard lock{buffer->mutex};
      return buffer->kill_reason;
    };
    st.executor = std::thread([me, binary = st.setup.exec_binary, options = st.setup.info.options,
                               ctx = std::move(ctx), kill_reason] {
      auto outcome = execute_in_process(binary, ctx, options, kill_reason);
      caf::anon_send(me, atoms::finished::value, outcome);
    });
    wake_waiters(self);
    return;
  }
  st.executor = std::thread([me, graph = st.setup.graph, ctx = std::move(ctx), buffer = st.buffer] {
    auto outcome = runtime::execute(*graph, ctx);
    {
      std::lock_guard lock{buffer->mutex};
      if (buffer->abandoned)
        --abandoned;
    }
    caf::anon_send(me, atoms::finished::value, outcome);
  });
  wake_waiters(self);
}

/// Leaves the run's executor to end alone: what it emits from here on is dropped; a run in a process
/// of its own has the process killed (with `reason`), and a thread is counted in
/// abandoned_executors() until it returns.
void abandon_executor(run_state& st, const std::string& reason) {
  std::lock_guard lock{st.buffer->mutex};
  st.buffer->closed = true;
  if (!st.setup.exec_binary.empty()) {
    st.buffer->kill_reason = reason;
  } else {
    st.buffer->abandoned = true;
    ++abandoned;  // under the lock the thread takes when it ends, so the count is exact
  }
}

/// After a cancel or an interrupt: a local run that has not ended by its stop deadline is ended
/// then.
void arm_stop_deadline(self_ptr self) {
  auto& st = self->state;
  if (st.setup.worker.empty() && st.setup.info.status == run_status::running)
    self->delayed_send(self, std::chrono::milliseconds(st.setup.stop_deadline_ms),
                       atoms::deadline::value);
}

/// The run did not reach a stop check in time (a read that blocks, a batch that takes minutes):
/// it ends interrupted now and frees its slot; its thread is abandoned, and what it emits from here
/// on is dropped.
void miss_stop_deadline(self_ptr self) {
  auto& st = self->state;
  if (is_final(st.setup.info.status) || !st.executor.joinable())
    return;
  flush(self);
  bool in_process = !st.setup.exec_binary.empty();
  std::string where;
  {
    std::lock_guard lock{st.buffer->mutex};
    where = st.buffer->current_node;
  }
  char seconds[32];  // "10", "0.2": as the registry writes its grace
  std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(st.setup.stop_deadline_ms) / 1000.0);
  auto reason = "the run did not stop within " + std::string{seconds} + " s of its "
                + (st.interrupt->load() ? "server's stop" : "cancel")
                + (where.empty() ? std::string{} : "; " + where + " was executing")
                + " and never reached a stop check (CODEFYUI_STOP_DEADLINE_S); "
                + (in_process ? "its process was killed" : "it was ended without it");
  abandon_executor(st, reason);
  append(self, "execution_stopped", json_text(stopped_data(stop_reason::timeout, reason)));
  if (in_process)
    return;  // the executor kills the process within a moment and posts the end
  st.executor.detach();
  finish(self, run_outcome{run_status::interrupted, reason, "{}"});
}

/// Ends a run that never started: cancelled (or pruned), or failed because nothing can take it.
void end_unstarted(self_ptr self, run_status status, const std::string& message) {
  auto reason = status == run_status::cancelled ? stop_reason::cancelled : stop_reason::not_placed;
  append(self, "execution_stopped", json_text(stopped_data(reason, message)));
  finish(self, run_outcome{status, status == run_status::cancelled ? "" : message, "{}"});
}

/// A cancel (dequeued: the queue took the run out of its queue, so it never starts), or with a
/// reason a study's prune. False when it had ended or a cancel is already on its way.
bool cancel(self_ptr self, bool dequeued, const std::string& prune_reason) {
  auto& st = self->state;
  if (is_final(st.setup.info.status) || st.stop->load())
    return false;
  st.stop->store(true);
  st.prune_reason = prune_reason;
  if (dequeued)
    end_unstarted(self, run_status::cancelled, "cancelled before it started");
  else if (!st.setup.worker.empty() && st.setup.info.status == run_status::running)
    self->send(st.setup.registry, atoms::stop::value, st.setup.info.id, false);
  arm_stop_deadline(self);
  return true;
}

} // namespace

int abandoned_executors() {
  return abandoned.load();
}

run_state::~run_state() {
  // A run that ended was joined in finish(). One still executing means the actor ended first (a
  // kill, a bug): the run's queue fails it when it hears of the actor's end, which it does only
  // once this returns, so this must not wait for the run to reach a stop check. A process is
  // killed (within a moment: the executor then returns); a thread is left to end alone.
  if (!executor.joinable())
    return;
  stop->store(true);
  abandon_executor(*this, "the run's actor ended before the run did");
  if (setup.exec_binary.empty())
    executor.detach();
  else
    executor.join();
}

void append_stored_event(storage::run_store& store, storage::run_directory* dir,
                         const std::string& run_id, const std::string& type,
                         const std::string& data) {
  run_event e{store.last_cursor(run_id) + 1, now_ms(), type, data};
  store.append_event(run_id, e);
  if (dir)
    dir->append(e);
}

caf::behavior run_actor(self_ptr self, run_setup setup, run_queue_actor queue) {
  self->state.setup = std::move(setup);
  self->state.queue = std::move(queue);
  if (self->state.setup.has_events)
    self->state.last_cursor = self->state.setup.store->last_cursor(self->state.setup.info.id);
  return guarded_behavior(
    "run",
    [=](atoms::place, const std::string& worker, const std::vector<std::string>& devices,
        const std::string& key, int num_threads) {
      // A run for any worker: now it has a place (a worker's device, or one of this server's).
      auto& st = self->state;
      st.setup.worker = worker;
      st.setup.worker_devices = devices;
      st.setup.info.queue_key = key;
      st.setup.context.slot = key;
      if (worker.empty()) {
        st.setup.context.device = devices.front();
        st.setup.context.num_threads = num_threads;
      }
      st.setup.store->update(st.setup.info);
    },
    [=](atoms::budget, std::int64_t bytes, const std::string& source, const std::string& note) {
      // Given or raised while it waits (seed 001, "Sharing a card"): it runs held to this one,
      // here or on its worker, and its options, run object and store row say so.
      auto& st = self->state;
      st.setup.context.memory_budget = bytes;
      st.setup.context.memory_budget_source = source;
      run_request options;
      if (policy::apply_options(nlohmann::json::parse(st.setup.info.options, nullptr, false), options).empty()) {
        options.memory_bytes = bytes;
        options.memory_source = source == "typed" ? "" : source;
        st.setup.info.options = json_text(policy::options_json(options));
        st.setup.store->update(st.setup.info);
      }
      append(self, "run_warning",
             json_text(nlohmann::json{{"kind", "memory_budget"},
                                      {"message", "the run's memory budget is now " + policy::gib_text(bytes)
                                                    + " per card: " + note}}));
    },
    [=](atoms::grant, const std::string&) {
      if (self->state.stop->load()) {
        end_unstarted(self, run_status::cancelled, "cancelled before it started");
        return;
      }
      start(self);
    },
    [=](atoms::assign) {
      // Its worker came back without it and had sent none of its events: the run never reached
      // it, so it goes again (a run being stopped is left to its stop's deadline).
      auto& st = self->state;
      if (st.setup.info.status == run_status::running && !st.setup.worker.empty() && !st.stop->load())
        start_remote(self);
    },
    [=](atoms::append, const std::string& type, std::string& data) {
      append(self, type, std::move(data));
      wake_waiters(self);
    },
    [=](atoms::append, std::vector<run_event>& events) {
      // A worker run's events, in the order its engine emitted them, with the worker's times;
      // the cursors are this server's.
      append_events(self, std::move(events));
      wake_waiters(self);
    },
    [=](atoms::flush) {
      flush(self);
      wake_waiters(self);
    },
    [=](atoms::finished, const run_outcome& outcome) {
      if (!is_final(self->state.setup.info.status))
        finish(self, outcome);
    },
    [=](atoms::finished, const run_outcome& outcome, stop_reason stopped) {
      // A worker run the server ended itself, with the word of its stop.
      if (!is_final(self->state.setup.info.status))
        finish(self, outcome, stopped);
    },
    [=](atoms::deadline) { miss_stop_deadline(self); },
    [=](atoms::cancel, bool dequeued) { return cancel(self, dequeued, ""); },
    [=](atoms::cancel, bool dequeued, const std::string& prune_reason) {
      return cancel(self, dequeued, prune_reason);
    },
    [=](atoms::stop, const std::string& reason) {
      // The queue took a waiting run out because what it waits for is gone: it fails unstarted.
      if (self->state.setup.info.status == run_status::queued)
        end_unstarted(self, run_status::failed, reason);
    },
    [=](atoms::interrupt) {
      auto& st = self->state;
      if (is_final(st.setup.info.status))
        return false;
      st.interrupt->store(true);
      st.stop->store(true);
      if (!st.setup.worker.empty() && st.setup.info.status == run_status::running)
        self->send(st.setup.registry, atoms::stop::value, st.setup.info.id, true);
      arm_stop_deadline(self);
      return true;
    },
    [=](atoms::info) { return self->state.setup.info; },
    [=](atoms::events, std::uint64_t cursor, std::uint32_t wait_ms) -> caf::result<event_batch> {
      auto& st = self->state;
      if (cursor < st.last_cursor || is_final(st.setup.info.status) || wait_ms == 0)
        return events_after(st, cursor);
      auto id = st.next_waiter++;
      auto rp = self->make_response_promise();
      st.waiters.push_back({id, cursor, rp});
      self->delayed_send(self, std::chrono::milliseconds(wait_ms), atoms::timeout::value, id);
      return caf::delegated<event_batch>{};
    },
    [=](atoms::timeout, std::uint64_t id) {
      auto& waiters = self->state.waiters;
      for (auto i = waiters.begin(); i != waiters.end(); ++i) {
        if (i->id == id) {
          i->promise.deliver(events_after(self->state, i->cursor));
          waiters.erase(i);
          return;
        }
      }
    },
    [=](atoms::wait) -> caf::result<run_info> {
      if (is_final(self->state.setup.info.status))
        return self->state.setup.info;
      self->state.end_waiters.push_back(self->make_response_promise());
      return caf::delegated<run_info>{};
    },
    [=](atoms::status) {
      const auto& st = self->state;
      return run_actor_status{st.setup.info.id, self->mailbox().size(), st.setup.info.status,
                              st.setup.info.queue_key, st.last_cursor, st.waiters.size()};
    },
    [=](atoms::quit) { self->quit(); }
  );
}

} // namespace cdui::actors
