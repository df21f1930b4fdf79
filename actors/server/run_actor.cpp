#include "actors/server/run_actor.hpp"
#include "actors/server/run_actor_parts.hpp"

#include <chrono>
#include <cstdio>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

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

namespace run_parts {

namespace {

/// A worker run: the registry sends it to the worker, whose agent executes it in a subprocess;
/// its events and its end come back as messages from the registry.
void start_remote(self_ptr self) {
  auto& st = self->state;
  if (!st.setup.registry) {
    finish(self, run_outcome{run_status::failed, "this server has no worker registry", "{}"});
    return;
  }
  assign_run a{st.setup.info.id,       st.setup.info.name,  st.setup.graph_json,
               st.setup.info.options, st.setup.worker_devices, st.setup.context.seed, {}};
  if (auto why = add_rank_zero_part(self, a); !why.empty()) {
    finish(self, run_outcome{run_status::failed, why, "{}"});
    return;
  }
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
  auto running = st.setup.info;
  running.status = run_status::running;
  running.started_ms = now_ms();
  running.queue_position = 0;
  // A worker run's start is recorded before the assignment leaves: a server killed in between
  // leaves a running run that its worker never had and sent no event of, which the next server
  // sends again.
  bool remote = !st.setup.worker.empty();
  if (!stored(self, [&] {
        if (remote)
          st.setup.store->record_worker_start(running, st.last_cursor);
        else
          st.setup.store->update(running);
      })) {
    finish(self, run_outcome{run_status::failed, st.store_failure, "{}"});
    return;
  }
  st.setup.info = std::move(running);
  if (remote) {
    start_remote(self);
    return;
  }
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
    executor_returned(*buffer);
    caf::anon_send(me, atoms::finished::value, outcome);
  });
  wake_waiters(self);
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
  finish_held(self);  // rank 0 has ended already: the run ends as it stands
  if (is_final(st.setup.info.status) || st.stop->load())
    return false;
  st.prune_reason = prune_reason;
  ask_to_stop(self, false);
  if (dequeued)
    end_unstarted(self, run_status::cancelled, "cancelled before it started");
  return true;
}

} // namespace

} // namespace run_parts

caf::behavior run_actor(run_parts::self_ptr self, run_setup setup, run_queue_actor queue) {
  using namespace run_parts;
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
      stored(self, [&] { st.setup.store->update(st.setup.info); });
    },
    [=](atoms::budget, std::int64_t bytes, const std::string& source, const std::string& note) {
      // Given or raised while it waits (docs/http-api.md, "Cards shared by memory"): it runs held to
      // this one, here or on its worker, and its options, run object and store row say so.
      auto& st = self->state;
      st.setup.context.memory_budget = bytes;
      st.setup.context.memory_budget_source = source;
      run_request options;
      if (policy::apply_options(nlohmann::json::parse(st.setup.info.options, nullptr, false), options).empty()) {
        options.memory_bytes = bytes;
        options.memory_source = source == "typed" ? "" : source;
        st.setup.info.options = json_text(policy::options_json(options));
        stored(self, [&] { st.setup.store->update(st.setup.info); });
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
      start_parts(self, events);
      append_events(self, std::move(events));
      wake_waiters(self);
    },
    [=](atoms::flush) {
      flush(self);
      wake_waiters(self);
    },
    [=](atoms::finished, const run_outcome& outcome) {
      // Answered through the promise (a worker's report, once the end is recorded).
      rank0_ended(self, outcome, self->make_response_promise());
    },
    [=](atoms::finished) { finish_held(self); },
    [=](atoms::part_ended, const std::string& worker, const run_outcome& outcome) {
      part_ended(self, worker, outcome);
    },
    [=](atoms::adopt) { return adopt_parts(self); },
    [=](atoms::finished, const run_outcome& outcome, stop_reason stopped) {
      // A worker run the server ended itself, with the word of its stop.
      if (!is_final(self->state.setup.info.status))
        finish_with(self, with_part_failure(self->state, outcome), stopped);
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
      finish_held(self);
      if (is_final(self->state.setup.info.status))
        return false;
      ask_to_stop(self, true);
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
    [=](atoms::tick) { retry_recording_end(self); },
    [=](atoms::quit) {
      // An end the store has not taken yet keeps the actor (tick) until it has.
      auto& st = self->state;
      st.quit_asked = true;
      if (st.end_unrecorded)
        return;
      // A run left queued for the next start: those waiting for it hear why no end comes here.
      let_waiters_go(self, "the server stopped; run " + st.setup.info.id + " is queued for its next start");
      self->quit();
    }
  );
}

} // namespace cdui::actors
