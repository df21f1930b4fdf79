#include "actors/server/run_queue.hpp"

#include <algorithm>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/guarded.hpp"
#include "actors/policy/run_options.hpp"
#include "actors/server/run_actor.hpp"
#include "actors/server/run_preparation.hpp"
#include "actors/server/run_queue_parts.hpp"
#include "messages/atoms.hpp"
#include "messages/clock.hpp"
#include "messages/json_text.hpp"
#include "messages/run_outcome.hpp"
#include "messages/slot_key.hpp"
#include "messages/worker.hpp"

namespace cdui::actors {

using namespace queue_parts;

namespace {


/// For a request whose answer only confirms: a run actor that has ended meanwhile is no error, and
/// an unhandled error would end the queue (CAF's default for a request without an error handler).

caf::error unknown_run(const std::string& id) {
  return make_api_error(error_kind::not_found, "no run has the id '" + id + "'");
}

std::vector<std::string> key_texts(const std::vector<slot_key>& slots) {
  std::vector<std::string> out;
  for (const auto& k : slots)
    out.push_back(k.str());
  return out;
}

/// Gives a floating run its place, one slot or a device set's (all on one offerer): its actor is
/// told, and the run leaves the floating runs.
void place_on(self_ptr self, const std::string& id, const std::vector<slot_key>& slots) {
  auto& st = self->state;
  const auto& first = slots.front();
  std::vector<std::string> devices;
  for (const auto& k : slots)
    devices.push_back(k.device);
  auto& run = st.runs.at(run_id{id});
  caf::anon_send(run.actor, atoms::place::value, first.offerer, devices, first.str(),
                 st.cfg.host.cores_per_run(first.device));
  run.remote = !first.local();
  run.keys = key_texts(slots);
  st.runs.unfloat(run.id);
}

/// Places the floating runs, oldest first: each on the first slot of its kind that would start it
/// at once by count; a run with a memory budget also on a card shared by memory, which the ledger
/// judges (ask_floating), unless it was told to wait for the same cards.
void place_floating(self_ptr self) {
  auto& st = self->state;
  for (const auto& queued : st.runs.floating()) {
    auto& run = st.runs.at(queued);
    const auto& id = queued.str();
    if (run.ask && !run.ask->answered)
      continue;  // the ledger's answer is on its way
    auto free = policy::free_slots(*run.floating, run.budget && run.budget->bytes > 0, st.workers,
                                   st.local, st.slots);
    auto taken = !free.set.empty() ? free.set
                 : free.by_count     ? std::vector<slot_key>{*free.by_count}
                                     : std::vector<slot_key>{};
    if (!taken.empty()) {
      run.memory_wait.reset();
      place_on(self, id, taken);
      st.slots.enqueue(id, key_texts(taken));
    } else if (!free.by_memory.empty() && (!run.ask || run.ask->cards != free.by_memory)) {
      ask_floating(self, id, free);
    }
  }
}

/// A queued run's place: in its device's queue, or among the floating runs.
std::uint32_t position_of(const run_queue_state& st, const std::string& id) {
  if (auto p = st.slots.position(id))
    return static_cast<std::uint32_t>(p);
  return static_cast<std::uint32_t>(st.runs.floating_position(run_id{id}));
}

/// A queued run's place, and why it waits (computed here, when its run object is asked for).
void note_wait(const run_queue_state& st, run_info& info) {
  info.queue_position = position_of(st, info.id);
  info.waiting_reason = waiting_reason(st, info.id);
}

/// Asks a run's actor for the caller, within `timeout`, and hands its answer on. An actor that has
/// died meanwhile, or did not answer in time, answers with an error instead; then
/// `otherwise(promise)` answers (a dead actor's run is the queue's to end, from its down message).
template <class T, class Otherwise, class... Ts>
caf::result<T> ask_run(self_ptr self, const caf::actor& run, caf::duration timeout,
                       Otherwise otherwise, Ts... xs) {
  auto rp = self->make_response_promise<T>();
  self->request(run, timeout, xs...)
    .then([rp](T& answer) mutable { rp.deliver(std::move(answer)); },
          [rp, otherwise](caf::error&) mutable { otherwise(rp); });
  return rp;
}

/// A run's events after `cursor` as the store has them.
event_batch stored_events(const run_queue_state& st, const std::string& id, std::uint64_t cursor) {
  event_batch batch;
  batch.events = st.cfg.store->events_after(id, cursor, max_events_per_answer);
  batch.finished = batch.events.size() < max_events_per_answer;
  return batch;
}

} // namespace

namespace {

/// A shutdown waits for the runs this process executes; a worker's runs go on there, and the next
/// server adopts them.
void maybe_drained(self_ptr self) {
  auto& st = self->state;
  if (!st.shutting_down)
    return;
  if (st.runs.runs_here())
    return;
  for (auto& rp : st.drained)
    rp.deliver(true);
  st.drained.clear();
}

} // namespace

/// Spawns a run's actor and watches it: the down handler of run_queue() fails a run whose actor
/// ends before the run has.
caf::actor queue_parts::spawn_run(self_ptr self, run_setup setup) {
  auto id = setup.info.id;
  auto run = self->spawn(run_actor, std::move(setup), caf::actor_cast<run_queue_actor>(self));
  self->monitor(run);
  self->state.runs.add(run_id{id}, run, run.id());
  if (self->state.cfg.on_run_spawned)
    self->state.cfg.on_run_spawned(id, run);
  return run;
}

/// Hands a prepared run to a new actor and queues it (or, interactive, starts it at once).
void queue_parts::launch(self_ptr self, prepared_run p, const run_request& req) {
  auto& st = self->state;
  auto id = p.setup.info.id;
  p.setup.info.queue_key = p.queue_key;
  p.setup.context.slot = p.queue_key;
  p.setup.context.run_id = id;
  auto queued_ms = p.setup.info.created_ms;
  auto run = spawn_run(self, std::move(p.setup));
  auto& record = st.runs.at(run_id{id});
  record.lane = req.lane;
  record.keys = p.keys;
  if (req.lane != run_lane::interactive)
    note_budget(record, p, req);
  for (const auto& [kind, message] : p.warnings)
    caf::anon_send(run, atoms::append::value, std::string{"run_warning"},
               json_text(nlohmann::json{{"kind", kind}, {"message", message}}));
  if (req.lane == run_lane::interactive) {
    record.session = req.session;
    st.runs.start(record, now_ms());
    caf::anon_send(run, atoms::grant::value, std::string{"interactive"});
    return;
  }
  record.queued_ms = queued_ms;
  if (p.floating) {
    st.runs.float_run(record, *p.floating);
    return;
  }
  record.remote = !slot_key::parse(p.keys.front()).local();
  st.slots.enqueue(id, p.keys);
}

/// Takes a floating run out before it is placed; false when it is not floating.
bool queue_parts::remove_floating(run_queue_state& st, const std::string& id) {
  return st.runs.unfloat(run_id{id});
}

void queue_parts::start_placed(self_ptr self, const std::string& id, const std::string& key) {
  auto& st = self->state;
  place_on(self, id, {slot_key::parse(key)});
  // It was judged on a slot that would start it at once; it starts now, as admit() would.
  st.slots.hold(id, {key});
  note_started(st, id);
  memory_started(self, id);
  caf::anon_send(st.runs.at(run_id{id}).actor, atoms::grant::value, id);
}

void queue_parts::pump(self_ptr self) {
  auto& st = self->state;
  place_floating(self);
  for (const auto& id : st.slots.admit()) {
    note_started(st, id);
    memory_started(self, id);
    if (auto* run = find_run(st, id))
      caf::anon_send(run->actor, atoms::grant::value, id);
  }
  for (const auto& id : st.slots.take_asks())
    ask_memory(self, id);  // at the front of a card shared by memory: the ledger decides
}

/// A run has ended, or its actor has: its slots are free, it leaves the lane, and what can start
/// now does.
void queue_parts::forget(self_ptr self, const std::string& id) {
  auto& st = self->state;
  st.slots.release(id);
  memory_forget(self, id);
  st.runs.erase(run_id{id});
  if (!st.shutting_down)
    pump(self);
  maybe_drained(self);
}

run_queue_actor::behavior_type run_queue(self_ptr self, run_queue_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.registry = st.cfg.registry;
  st.local = {st.cfg.host.devices(), st.cfg.host.counts()};
  for (const auto& d : st.cfg.host.devices())
    st.slots.set_limit(d.name, d.slot_limit);
  for (const auto& [key, limit] : st.cfg.limits)
    st.slots.set_limit(key, limit);
  start_ledger(self);
  self->set_down_handler([=](caf::down_msg& down) { run_actor_down(self, down); });
  if (st.cfg.resume)
    resume(self);
  // Forwards a request about a run that has not ended to its actor.
  auto active = [=](const std::string& id) -> caf::actor {
    auto* run = find_run(self->state, id);
    return run ? run->actor : caf::actor{};
  };
  // A cancel, or with a reason a study's prune: a queued run leaves its queue, a running one stops.
  auto cancel = [=](const std::string& id, const std::string& prune_reason) -> caf::result<bool> {
    auto run = active(id);
    if (!run) {
      if (self->state.cfg.store->find(id))
        return false;
      return unknown_run(id);
    }
    bool dequeued = self->state.slots.remove(id) || remove_floating(self->state, id);
    if (dequeued)
      pump(self);  // the runs behind it move up; a device set it blocked may start
    return ask_run<bool>(self, run, caf::duration{request_deadline}, [](auto& rp) { rp.deliver(false); },
                         atoms::cancel::value, dequeued, prune_reason);
  };
  return guarded_typed_behavior<run_queue_actor>(
    "run queue",
    [=](atoms::submit, run_request& req) { return submit(self, req); },
    [=](atoms::flush) { record_submits(self); },
    [=](atoms::sweep, sweep_submission& s) { return submit_sweep(self, s); },
    [=](atoms::trial, trial_submission& t) { return submit_trial(self, t); },
    [=](atoms::info, const std::string& id) -> caf::result<run_info> {
      if (auto run = active(id)) {
        auto rp = self->make_response_promise<run_info>();
        self->request(run, request_deadline, atoms::info::value)
          .then(
            [=](run_info& info) mutable {
              if (info.status == run_status::queued)
                note_wait(self->state, info);
              rp.deliver(std::move(info));
            },
            [=](caf::error& e) mutable {
              // The run's actor did not answer: what the store has is the next best thing.
              if (auto stored = self->state.cfg.store->find(id))
                rp.deliver(stored->info);
              else
                rp.deliver(std::move(e));
            });
        return rp;
      }
      if (auto stored = self->state.cfg.store->find(id))
        return stored->info;
      return unknown_run(id);
    },
    [=](atoms::list, const run_list_request& r) -> caf::result<storage::run_page> {
      storage::run_filter filter{std::nullopt, r.worker, r.device};
      if (!r.status.empty()) {
        filter.status = parse_run_status(r.status);
        if (!filter.status)
          return make_api_error(error_kind::refused,
                                "status '" + r.status + "' is not one of queued, running, succeeded, "
                                                        "failed, cancelled, interrupted, pruned");
      }
      auto page = self->state.cfg.store->list(filter, r.limit, r.offset);
      for (auto& info : page.runs)
        if (info.status == run_status::queued)
          note_wait(self->state, info);
      return page;
    },
    [=](atoms::cancel, const std::string& id) -> caf::result<bool> { return cancel(id, ""); },
    [=](atoms::cancel, const std::string& id, const std::string& prune_reason) -> caf::result<bool> {
      // A study's pruner: stopped as a cancel stops it, but ends `pruned` with the reason.
      return cancel(id, prune_reason);
    },
    [=](atoms::events, const std::string& id, std::uint64_t cursor,
        std::uint32_t wait_ms) -> caf::result<event_batch> {
      if (auto run = active(id))
        return ask_run<event_batch>(
          self, run, caf::duration{request_deadline + std::chrono::milliseconds(wait_ms)},
          [=](auto& rp) { rp.deliver(stored_events(self->state, id, cursor)); },
          atoms::events::value, cursor, wait_ms);
      if (!self->state.cfg.store->find(id))
        return unknown_run(id);
      return stored_events(self->state, id, cursor);
    },
    [=](atoms::wait, const std::string& id) -> caf::result<run_info> {
      if (auto run = active(id))
        // As long as the run takes (server::wait's caller asked for its end). A dead actor's run
        // ends when the queue handles its down message: asked again then.
        return ask_run<run_info>(
          self, run, caf::duration{caf::infinite},
          [=](auto& rp) {
            self->request(caf::actor_cast<run_queue_actor>(self), caf::infinite, atoms::wait::value, id)
              .then([rp](run_info& info) mutable { rp.deliver(std::move(info)); },
                    [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
          },
          atoms::wait::value);
      if (auto stored = self->state.cfg.store->find(id))
        return stored->info;
      return unknown_run(id);
    },
    [=](atoms::erase, const std::string& id) {
      if (active(id))
        return erase_result::active;
      if (!self->state.cfg.store->erase(id))
        return erase_result::unknown;
      std::error_code ec;
      std::filesystem::remove_all(self->state.cfg.home / "runs" / id, ec);
      if (const auto& outputs = self->state.cfg.stores.run_outputs)
        caf::anon_send(outputs, atoms::erase::value, std::string{}, id);
      return erase_result::erased;
    },
    [=](atoms::ended, const std::string& id) {
      // After everything the queue forwarded to it earlier (messages from one sender keep their
      // order), so no request finds it gone.
      if (auto run = active(id))
        caf::anon_send(run, atoms::quit::value);
      forget(self, id);
    },
    [=](atoms::worker_update, const std::string& name, const std::vector<device_offer>& offers,
        worker_availability availability, bool one_shot) {
      worker_update(self, name, offers, availability, one_shot);
    },
    [=](atoms::worker_gone, const std::string& name, const std::string& reason) {
      worker_gone(self, name, reason);
    },
    [=](atoms::share, const std::string& offerer, const std::string& device, bool shared) {
      return share_card(self, offerer, device, shared);
    },
    [=](atoms::memory_freed, const std::string& key) { memory_freed(self, key); },
    [=](atoms::report) -> caf::result<memory_ledger_status> {
      auto rp = self->make_response_promise<memory_ledger_status>();
      self->request(self->state.ledger, request_deadline, atoms::status::value)
        .then([=](memory_ledger_status& s) mutable { rp.deliver(std::move(s)); },
              [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
      return rp;
    },
    [=](atoms::drop, const std::string& session) {
      // The editor session ended: its next run, if it comes back, draws a new seed.
      return self->state.session_seeds.erase(session) > 0;
    },
    [=](atoms::shutdown) -> caf::result<bool> {
      auto& st = self->state;
      st.shutting_down = true;
      stop_runs(self);
      auto rp = self->make_response_promise<bool>();
      st.drained.push_back(rp);
      maybe_drained(self);
      return rp;
    },
    [=](atoms::adopt) -> caf::result<bool> {
      auto& st = self->state;
      if (st.parts_adopting == 0)
        return true;
      st.parts_adopted.push_back(self->make_response_promise<bool>());
      return st.parts_adopted.back();
    },
    [=](atoms::status) { return status_tree(self, true); },
    [=](atoms::status, bool with_runs) { return status_tree(self, with_runs); });
}

} // namespace cdui::actors
