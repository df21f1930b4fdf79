// The run queue's part in sharing cards by memory (docs/http-api.md, "Cards shared by memory"): which of its keys
// are shared, the memory ledger it asks before a run starts on one, and the runs that wait for
// memory, with why.
#include <algorithm>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/api_errors.hpp"
#include "actors/policy/card_context.hpp"
#include "actors/policy/memory_budget.hpp"
#include "messages/slot_key.hpp"
#include "actors/server/memory_ledger.hpp"
#include "actors/server/run_queue_parts.hpp"
#include "devices/device.hpp"
#include "messages/clock.hpp"

namespace cdui::actors::queue_parts {

std::string card_name(const std::string& key) {
  auto at = slot_key::parse(key);
  return at.device + " on " + (at.local() ? std::string{"this server"} : at.offerer);
}

namespace {

/// The card behind the key (policy::card_id): the same for every offerer of one card (its UUID,
/// from this server's devices or the worker's latest offer), so the ledger keeps one ledger for it.
std::string card_of(const run_queue_state& st, const std::string& key) {
  auto at = slot_key::parse(key);
  std::string uuid;
  if (at.local()) {
    for (const auto& d : st.local.devices)
      if (d.name == at.device)
        uuid = d.uuid;
  } else if (auto w = st.workers.find(at.offerer); w != st.workers.end()) {
    auto d = std::find(w->second.devices.begin(), w->second.devices.end(), at.device);
    auto i = static_cast<std::size_t>(d - w->second.devices.begin());
    if (i < w->second.uuids.size())
      uuid = w->second.uuids[i];
  }
  return policy::card_id(at, uuid);
}

/// What the runs on the card have measured of its CUDA context (the store's row).
policy::card_context measured_context_of(const run_queue_state& st, const std::string& card) {
  policy::card_context c;
  if (auto row = st.cfg.store->context(card))
    c = {row->held_bytes, row->held_run, row->created_bytes, row->created_run};
  return c;
}

/// What each run on the card holds besides its budget, and how texts call it: on CUDA the context
/// runs on the card measured, else the allowance (policy::context_to_count); elsewhere the sim
/// allowance.
policy::counted_context context_of(const run_queue_state& st, const std::string& key) {
  auto device = slot_key::parse(key).device;
  if (devices::kind_of(device) != "cuda")
    return {st.cfg.sim_context_bytes, policy::context_name(device)};
  return policy::context_to_count(measured_context_of(st, card_of(st, key)), st.cfg.cuda_context_bytes,
                                  policy::context_name(device));
}

/// The CUDA context the ended run measured on each of its cards: kept for the card (the largest
/// of each kind), and what its ledger counts from now on.
void record_context(self_ptr self, const std::string& id) {
  auto& st = self->state;
  const auto* run = find_run(st, id);
  if (!run)
    return;
  auto stored = st.cfg.store->find(id);
  if (!stored)
    return;
  for (const auto& [device, figures] : policy::measured_contexts(stored->info.final_metrics)) {
    auto key = policy::key_of_run_device(run->keys, device);
    if (!key)
      continue;
    auto card = card_of(st, *key);
    auto measured = measured_context_of(st, card);
    if (!policy::take_in(measured, figures, id))
      continue;
    st.cfg.store->put_context(card, {measured.held, measured.held_run, measured.created, measured.created_run,
                                     now_ms()});
    auto counted = policy::context_to_count(measured, st.cfg.cuda_context_bytes,
                                            policy::context_name(slot_key::parse(*key).device));
    spdlog::info("run {} measured the CUDA context on {}: {} held besides its allocator, {} when created; "
                 "each run there counts {}", id, card_name(*key), figures.held ? policy::gib_text(*figures.held) : "-",
                 figures.created ? policy::gib_text(*figures.created) : "-", policy::gib_text(counted.bytes));
    if (st.ledger)
      caf::anon_send(st.ledger, atoms::context::value, card, counted.bytes, counted.name);
  }
}

/// Puts the key under the ledger (many runs by count, each admitted by its budget) or back to
/// its limit by count. A run holding the card when it turns shared keeps it to itself.
void apply_share(self_ptr self, const std::string& key, bool shared) {
  auto& st = self->state;
  if (shared == st.slots.gated(key))
    return;
  std::vector<std::string> holders;
  for (const auto& slot : st.slots.slots())
    if (slot.key == key)
      holders = slot.running;
  if (shared) {
    st.exclusive_limits[key] = st.slots.limit(key);
    st.slots.set_limit(key, policy::shared_slot_limit);
    st.shared_keys.insert(key);
  } else {
    st.slots.set_limit(key, st.exclusive_limits[key]);
    st.exclusive_limits.erase(key);
    st.shared_keys.erase(key);
    st.runs.ungate(key);
  }
  st.slots.set_gated(key, shared);
  // A run on the card already counts its budget (a worker run adopted after a restart); one
  // without keeps the card to itself.
  std::vector<std::int64_t> budgets;
  for (const auto& id : holders) {
    const auto* run = find_run(st, id);
    budgets.push_back(run && run->budget ? run->budget->bytes : 0);
  }
  auto context = context_of(st, key);
  caf::anon_send(st.ledger, atoms::share::value,
                 card_share{key, card_of(st, key), card_name(key), context.bytes, context.name, holders, budgets, shared});
  // A card other offerers offer too admits many runs only while every online one shares it: its
  // budget is the smallest limit among them (64 shared, else the limit by count).
  regroup(self, "");
}

/// The ledger refused a queued run: it ends failed with the reason (and why its budget is what it
/// is, when the queue raised or gave it).
void refuse(self_ptr self, const std::string& id, const std::string& reason) {
  auto& st = self->state;
  st.slots.remove(id);
  auto* run = find_run(st, id);
  if (!run)
    return;
  run->memory_wait.reset();
  const auto& b = run->budget;
  auto why = !b || b->note.empty()
               ? reason
               : reason + " (its budget of " + policy::gib_text(b->bytes) + " is " + b->note + ")";
  if (!run->started)
    caf::anon_send(run->actor, atoms::stop::value, why);
}

/// Why a run waits when the ledger did not answer its ask.
std::string ledger_silent(const caf::error& e) {
  return "waits for memory: the memory ledger did not answer (" + caf::to_string(e)
         + "); asked again when memory frees";
}

} // namespace

void start_ledger(self_ptr self) {
  auto& st = self->state;
  st.ledger = self->spawn<caf::linked>(memory_ledger, memory_ledger_config{st.cfg.probe, st.cfg.probe_interval});
  self->send(st.ledger, atoms::attach::value, caf::actor_cast<run_queue_actor>(self));
  // This server's cards now; a worker's once it offers them (share_offered).
  for (const auto& card : st.cfg.store->shared_cards()) {
    if (!card.offerer.empty())
      st.shared_keys.insert(slot_key{card.offerer, card.device}.str());
    else if (policy::sharing_refusal(true, card.device).empty())
      apply_share(self, card.device, true);
  }
}

void share_offered(self_ptr self, const std::string& key, std::int64_t total, std::int64_t free) {
  auto& st = self->state;
  st.offered_memory[key] = {total, free};
  if (!st.shared_keys.count(key))
    return;
  apply_share(self, key, true);
  caf::anon_send(st.ledger, atoms::report::value, key, total, free);
}

caf::result<bool> share_card(self_ptr self, const std::string& offerer, const std::string& device, bool shared) {
  auto& st = self->state;
  auto unknown = [](std::string why) { return make_api_error(error_kind::not_found, std::move(why)); };
  if (!offerer.empty()) {
    auto w = st.workers.find(offerer);
    if (w == st.workers.end())
      return unknown("no worker named '" + offerer + "' has connected to this server since it started");
    if (std::find(w->second.devices.begin(), w->second.devices.end(), device) == w->second.devices.end())
      return unknown("no device '" + device + "' on worker '" + offerer + "' (`cdui workers` lists its devices)");
  } else if (std::none_of(st.local.devices.begin(), st.local.devices.end(),
                          [&](const auto& d) { return d.name == device; })) {
    return unknown("this server has no device '" + device + "' (`cdui status` lists its devices)");
  }
  if (auto why = policy::sharing_refusal(offerer.empty(), device); !why.empty())
    return make_api_error(error_kind::conflict, why);
  auto key = slot_key{offerer, device}.str();
  st.cfg.store->set_shared(offerer, device, shared, now_ms());
  spdlog::info("{} is {}", card_name(key), shared ? "shared by memory: runs there declare a budget"
                                                  : "exclusive: one run at a time by count");
  apply_share(self, key, shared);
  // A worker's card: its figures from the latest heartbeat, so a budget larger than the card is
  // refused now rather than after the next one (this server's cards the ledger probes itself).
  auto figures = st.offered_memory.find(key);
  if (shared && !offerer.empty() && figures != st.offered_memory.end())
    caf::anon_send(st.ledger, atoms::report::value, key, figures->second.first, figures->second.second);
  pump(self);
  return true;
}

/// A run at the front of a shared card with room by count: the ledger judges its budget.
void ask_memory(self_ptr self, const std::string& id) {
  auto& st = self->state;
  auto* run = find_run(st, id);
  if (!run)
    return;
  if (!run->budget || (run->budget->bytes == 0 && !default_budget(self, id))) {
    // Queued while the card was Exclusive, and no run of its graph has left a peak to go by yet.
    st.slots.wait(id);
    run->memory_wait = "waits for a budget: its card turned shared by memory after it was queued, "
                             "and no run of its graph on as many cards has succeeded yet to give it "
                             "one; it gets one when such a run succeeds (or cancel it and queue it "
                             "again with target.memory_gib)";
    return;
  }
  std::vector<std::string> keys;
  for (const auto& k : run->keys)
    if (st.slots.gated(k))
      keys.push_back(k);
  if (!keys.empty())
    run->gate = keys.front();
  const auto& b = *run->budget;
  self->request(st.ledger, request_deadline, atoms::ask::value,
                memory_ask{id, b.bytes, keys, false, b.has_wait, b.wait})
    .then(
      [=](memory_answer& a) {
        auto& st = self->state;
        auto* run = find_run(st, id);
        if (!run) {  // ended meanwhile (cancelled)
          self->send(st.ledger, atoms::released::value, id);
          return;
        }
        switch (static_cast<policy::memory_decision::kind>(a.kind)) {
        case policy::memory_decision::kind::grant:
          run->memory_wait.reset();
          if (!st.slots.grant(id))  // the card turned exclusive meanwhile: it starts by count
            self->send(st.ledger, atoms::released::value, id);
          pump(self);
          break;
        case policy::memory_decision::kind::wait:
          run->memory_wait = a.reason;
          st.slots.wait(id);
          break;
        case policy::memory_decision::kind::refuse:
          refuse(self, id, a.reason);
          pump(self);
          break;
        }
      },
      [=](caf::error& e) {
        auto& st = self->state;
        if (auto* run = find_run(st, id)) {
          run->memory_wait = ledger_silent(e);
          st.slots.wait(id);
        }
      });
}

void ask_floating(self_ptr self, const std::string& id, const policy::floating_slots& free) {
  auto& st = self->state;
  auto& run = st.runs.at(run_id{id});
  const auto& b = *run.budget;
  run.ask = policy::floating_ask{false, free.by_memory};
  // Judged as a run that may wait; place_later() decides from the answer and the cards not asked.
  self->request(st.ledger, request_deadline, atoms::ask::value, memory_ask{id, b.bytes, free.by_memory, true, true, true})
    .then(
      [=](memory_answer& a) {
        auto& st = self->state;
        auto* run = find_run(st, id);
        if (!run || !run->floating || !run->ask) {  // ended, or placed, meanwhile
          self->send(st.ledger, atoms::released::value, id);
          return;
        }
        const auto& b = *run->budget;
        auto d = policy::place_later({static_cast<policy::memory_decision::kind>(a.kind), {}, a.reason},
                                     free.busy_others,
                                     b.has_wait ? std::optional<bool>{b.wait} : std::nullopt);
        switch (d.answer) {
        case policy::memory_decision::kind::grant:
          run->memory_wait.reset();
          start_placed(self, id, a.cards.front());
          break;
        case policy::memory_decision::kind::wait:
          run->ask->answered = true;
          run->memory_wait = d.reason;
          break;
        case policy::memory_decision::kind::refuse:
          remove_floating(st, id);
          refuse(self, id, d.reason);
          pump(self);
          break;
        }
      },
      [=](caf::error& e) {
        auto* run = find_run(self->state, id);
        if (run && run->ask) {
          run->ask->answered = true;
          run->memory_wait = ledger_silent(e);
        }
      });
}

void memory_freed(self_ptr self, const std::string& key) {
  self->state.slots.ask_again(key);
  // The floating runs told to wait are asked again (they may use any shared card of their kind).
  self->state.runs.ask_again();
  if (!self->state.shutting_down)
    pump(self);
}

void memory_started(self_ptr self, const std::string& id) {
  if (auto* run = find_run(self->state, id); run && run->budget)
    self->send(self->state.ledger, atoms::started::value, id);
}

void memory_forget(self_ptr self, const std::string& id) {
  auto& st = self->state;
  try {
    record_peak(self, id);
  } catch (const std::exception& e) {
    // A peak the store refuses (a full disk) is lost, not the ledger's release of the run below.
    spdlog::warn("run {}: its measured peak is not recorded: {}", id, e.what());
  }
  try {
    record_context(self, id);
  } catch (const std::exception& e) {
    spdlog::warn("run {}: the CUDA context it measured is not recorded: {}", id, e.what());
  }
  if (st.ledger)
    self->send(st.ledger, atoms::released::value, id);
}

} // namespace cdui::actors::queue_parts
