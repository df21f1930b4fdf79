#include "actors/run_actor.hpp"

#include <chrono>
#include <limits>

#include <caf/all.hpp>

#include "messages/atoms.hpp"
#include "messages/run_outcome.hpp"

namespace cdui::actors {

namespace {

using self_ptr = caf::stateful_actor<run_state>*;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

event_batch events_after(const run_state& st, std::uint64_t cursor) {
  event_batch batch;
  batch.finished = is_final(st.setup.info.status);
  // Cursors are 1-based and gap-free: event k sits at index k - 1.
  for (auto i = cursor; i < st.events.size() && batch.events.size() < max_events_per_answer; ++i)
    batch.events.push_back(st.events[i]);
  if (batch.events.size() < st.events.size() - std::min<std::size_t>(cursor, st.events.size()))
    batch.finished = false;  // more to read first
  return batch;
}

void wake_waiters(self_ptr self) {
  auto& st = self->state;
  bool ended = is_final(st.setup.info.status);
  auto last = static_cast<std::uint64_t>(st.events.size());
  std::vector<event_waiter> still;
  for (auto& w : st.waiters) {
    if (w.cursor < last || ended)
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

void append(self_ptr self, const std::string& type, std::string data) {
  auto& st = self->state;
  run_event e;
  e.cursor = st.events.size() + 1;
  e.time_ms = now_ms();
  e.type = type;
  e.data = std::move(data);
  st.setup.dir->append(e);
  st.events.push_back(std::move(e));
}

void finish(self_ptr self, const run_outcome& outcome) {
  auto& st = self->state;
  st.setup.info.status = outcome.status;
  st.setup.info.error = outcome.error;
  st.setup.info.final_metrics = outcome.final_metrics;
  st.setup.info.finished_ms = now_ms();
  if (st.executor.joinable())
    st.executor.join();
  wake_waiters(self);
}

void start(self_ptr self) {
  auto& st = self->state;
  st.setup.info.status = run_status::running;
  st.setup.info.started_ms = now_ms();
  auto ctx = st.setup.context;
  ctx.stop = st.stop;
  caf::actor me = caf::actor_cast<caf::actor>(self);
  ctx.emit = [me](const std::string& type, const nlohmann::json& data) {
    caf::anon_send(me, atoms::append::value, type, data.dump());
  };
  st.executor = std::thread([me, graph = st.setup.graph, ctx = std::move(ctx)] {
    auto outcome = runtime::execute(*graph, ctx);
    caf::anon_send(me, atoms::finished::value, outcome);
  });
}

} // namespace

run_state::~run_state() {
  // The executor posts its outcome before it returns, so by the time the actor is gone it has ended
  // or is about to; never leave a joinable thread behind.
  if (executor.joinable()) {
    stop->store(true);
    executor.join();
  }
}

caf::behavior run_actor(self_ptr self, run_setup setup, caf::actor slot) {
  self->state.setup = std::move(setup);
  self->state.slot = std::move(slot);
  return {
    [=](atoms::grant, const std::string& key) {
      auto& st = self->state;
      st.slot_key = key;
      if (st.stop->load()) {
        // Cancelled while the grant was on its way: give the slot straight back and end here.
        self->send(st.slot, atoms::release::value, st.setup.info.id);
        append(self, "execution_stopped", R"({"reason":"cancelled before it started"})");
        finish(self, run_outcome{run_status::cancelled, "", "{}"});
        return;
      }
      start(self);
    },
    [=](atoms::append, const std::string& type, std::string& data) {
      append(self, type, std::move(data));
      wake_waiters(self);
    },
    [=](atoms::finished, const run_outcome& outcome) {
      self->send(self->state.slot, atoms::release::value, self->state.setup.info.id);
      finish(self, outcome);
    },
    [=](atoms::cancel) -> caf::result<bool> {
      auto& st = self->state;
      if (is_final(st.setup.info.status) || st.stop->load())
        return false;
      st.stop->store(true);
      if (st.setup.info.status == run_status::running)
        return true;
      auto rp = self->make_response_promise<bool>();
      self->request(st.slot, caf::infinite, atoms::dequeue::value, st.setup.info.id)
        .then([=](bool removed) mutable {
          if (removed) {
            append(self, "execution_stopped", R"({"reason":"cancelled before it started"})");
            finish(self, run_outcome{run_status::cancelled, "", "{}"});
          }
          rp.deliver(true);
        });
      return rp;
    },
    [=](atoms::info) { return self->state.setup.info; },
    [=](atoms::events, std::uint64_t cursor, std::uint32_t wait_ms) -> caf::result<event_batch> {
      auto& st = self->state;
      if (cursor < st.events.size() || is_final(st.setup.info.status) || wait_ms == 0)
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
  };
}

} // namespace cdui::actors
