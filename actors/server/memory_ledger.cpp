#include "actors/server/memory_ledger.hpp"

#include <algorithm>
#include <memory>
#include <optional>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/deadlines.hpp"
#include "actors/common/gather.hpp"
#include "actors/common/guarded.hpp"
#include "actors/policy/memory_budget.hpp"
#include "actors/server/device_slot.hpp"
#include "messages/slot_key.hpp"

namespace cdui::actors {

namespace {

using self_ptr = memory_ledger_actor::stateful_pointer<memory_ledger_state>;
using policy::card_ledger;

/// One run's budget being judged, card after card.
struct ask_job {
  std::string run;
  policy::memory_request request;
  std::vector<std::string> keys;
  std::vector<card_ledger::verdict> verdicts;
  /// The cards that reserved the budget so far: the keys asked, and their cards' ids.
  std::vector<std::string> reserved;
  std::vector<std::string> reserved_cards;
  /// A device set of several cards, judged and reserved with no other ask between.
  bool whole_set = false;
  caf::typed_response_promise<memory_answer> promise;
};

card_ledger::verdict verdict_of(const memory_verdict& v) {
  return {static_cast<card_ledger::fit>(v.fit), v.reason};
}

card_ledger::verdict no_answer(const std::string& key, const caf::error& e) {
  return {card_ledger::fit::pending, "the actor of card " + key + " did not answer (" + caf::to_string(e) + ")"};
}

/// The card a slot key stands for; null when the key is not shared.
const shared_key* shared_card(const memory_ledger_state& st, const std::string& key) {
  auto i = st.cards.find(key);
  return i == st.cards.end() ? nullptr : &i->second;
}

/// The key's card; none when it is not shared (any more), which the job records as a card that
/// never fits.
const shared_key* slot_for(self_ptr self, ask_job& job, const std::string& key) {
  if (const auto* card = shared_card(self->state, key))
    return card;
  job.verdicts.push_back({card_ledger::fit::never, key + " is not shared by memory"});
  return nullptr;
}

void release_on(self_ptr self, const std::string& run, const std::vector<std::string>& cards) {
  for (const auto& card : cards)
    if (auto i = self->state.slots.find(card); i != self->state.slots.end())
      self->send(i->second, atoms::released::value, run);
}

void finish(self_ptr self, const std::shared_ptr<ask_job>& job) {
  auto decision = policy::decide_verdicts(job->verdicts, job->request);
  memory_answer answer{static_cast<int>(decision.answer), {}, decision.reason};
  if (decision.answer == policy::memory_decision::kind::grant) {
    answer.cards = job->reserved;
    self->state.runs[job->run] = {job->reserved_cards, job->request.budget, false};
  } else {
    release_on(self, job->run, job->reserved_cards);  // a device set that did not get every card
  }
  job->promise.deliver(std::move(answer));
}

/// Reserves the budget on card `i` and the ones after it (all of them; or, placed later, the
/// first that has room).
void reserve_from(self_ptr self, std::shared_ptr<ask_job> job, std::size_t i) {
  if (i == job->keys.size()) {
    finish(self, job);
    return;
  }
  const auto& key = job->keys[i];
  const auto* card = slot_for(self, *job, key);
  if (!card) {
    reserve_from(self, job, i + 1);
    return;
  }
  auto on_verdict = [=, id = card->card](memory_verdict& v) {
    job->verdicts.push_back(verdict_of(v));
    if (job->verdicts.back().answer == card_ledger::fit::fits) {
      job->reserved.push_back(key);
      job->reserved_cards.push_back(id);
      if (job->request.any_of) {
        finish(self, job);
        return;
      }
    }
    reserve_from(self, job, i + 1);
  };
  auto on_error = [=](caf::error& e) {
    job->verdicts.push_back(no_answer(key, e));
    reserve_from(self, job, i + 1);
  };
  auto reply = self->request(card->slot, request_deadline, atoms::reserve::value, job->run,
                             job->request.budget);
  // A device set's cards were judged together (awaited) and reserve so too. Otherwise each slot
  // reserves atomically, so asks on other cards go on meanwhile.
  if (job->whole_set)
    reply.await(on_verdict, on_error);
  else
    reply.then(on_verdict, on_error);
}

/// A device set: every card is judged before any reserves, so a set that does not fit leaves no
/// reservation behind (whose release would wake the runs waiting there for nothing). Awaited: no
/// other ask is judged meanwhile.
void judge_from(self_ptr self, std::shared_ptr<ask_job> job, std::size_t i) {
  if (i == job->keys.size()) {
    bool all_fit = std::all_of(job->verdicts.begin(), job->verdicts.end(), [](const auto& v) {
      return v.answer == card_ledger::fit::fits;
    });
    if (!all_fit) {
      finish(self, job);
      return;
    }
    job->verdicts.clear();
    reserve_from(self, job, 0);
    return;
  }
  const auto& key = job->keys[i];
  const auto* card = slot_for(self, *job, key);
  if (!card) {
    judge_from(self, job, i + 1);
    return;
  }
  self->request(card->slot, request_deadline, atoms::ask::value, job->request.budget)
    .await(
      [=](memory_verdict& v) {
        job->verdicts.push_back(verdict_of(v));
        judge_from(self, job, i + 1);
      },
      [=](caf::error& e) {
        job->verdicts.push_back(no_answer(key, e));
        judge_from(self, job, i + 1);
      });
}

/// Tells the card's slot which keys share it now and how its texts name it (policy::card_name).
void rename(self_ptr self, const std::string& card) {
  std::vector<std::string> keys;
  std::vector<std::string> names;
  for (const auto& [key, name] : self->state.offerers[card]) {
    keys.push_back(key);
    names.push_back(name);
  }
  self->send(self->state.slots.at(card), atoms::share::value, policy::card_name(names), keys);
}

bool unshare(self_ptr self, const std::string& key) {
  auto& st = self->state;
  auto alias = st.cards.find(key);
  if (alias == st.cards.end())
    return false;
  auto card = alias->second.card;
  st.cards.erase(alias);
  auto& offerers = st.offerers[card];
  offerers.erase(key);
  if (!offerers.empty()) {
    // Another offerer still shares the card: its ledger goes on, and the runs that came through
    // `key` stay on it until they end (they are on the card all the same).
    rename(self, card);
    return true;
  }
  st.offerers.erase(card);
  if (auto slot = st.slots.find(card); slot != st.slots.end()) {
    caf::anon_send_exit(slot->second, caf::exit_reason::user_shutdown);
    st.slots.erase(slot);
  }
  st.configs.erase(card);
  for (auto& [run, place] : st.runs)
    place.cards.erase(std::remove(place.cards.begin(), place.cards.end(), card), place.cards.end());
  return true;
}

/// A new slot for `card`, shared through `keys`, monitored: the ledger replaces it if it ends.
device_slot_actor spawn_slot(self_ptr self, const std::string& card, std::vector<std::string> keys) {
  return self->spawn<caf::monitored>(device_slot, card, std::move(keys), self->state.configs.at(card),
                                     caf::actor_cast<memory_ledger_actor>(self));
}

/// The slot of `card` ended unexpectedly: a new one takes its place and the running runs on the
/// card (their budgets; a budgetless one holds it), and is given the card's figures when this
/// server measures it (a worker's card: at its next heartbeat). A run granted there but not yet
/// started is adopted by the new slot when it starts (the started message adopts it), and one that
/// only asked is the queue's to ask again. A card whose slot keeps dying is left without one after
/// max_slot_replacements, logged: its asks then wait, answered "did not answer".
void replace_slot(self_ptr self, const std::string& card, const caf::error& reason) {
  auto& st = self->state;
  if (++st.replacements[card] > max_slot_replacements) {
    spdlog::error("memory ledger: the actor of card {} ended unexpectedly again ({}); it is not replaced "
                  "after {} replacements, and runs there wait until the server restarts",
                  card, caf::to_string(reason), max_slot_replacements);
    return;
  }
  std::vector<std::string> keys;
  for (const auto& [key, name] : st.offerers[card])
    keys.push_back(key);
  spdlog::error("memory ledger: the actor of card {} ended unexpectedly ({}); a new one takes over its "
                "runs", card, caf::to_string(reason));
  auto slot = spawn_slot(self, card, keys);
  st.slots[card] = slot;
  rename(self, card);
  for (auto& [key, shared] : st.cards)
    if (shared.card == card)
      shared.slot = slot;
  for (const auto& [run, place] : st.runs)
    if (place.started && std::find(place.cards.begin(), place.cards.end(), card) != place.cards.end()) {
      if (place.budget > 0)
        self->send(slot, atoms::adopt::value, run, place.budget);
      else
        self->send(slot, atoms::hold::value, run);
    }
  if (st.cfg.probe && !keys.empty())
    if (auto figures = st.cfg.probe(keys.front()))
      self->send(slot, atoms::report::value, figures->first, figures->second);
}

bool share(self_ptr self, const card_share& c) {
  auto& st = self->state;
  if (!c.shared)
    return unshare(self, c.key);
  if (st.cards.count(c.key))
    return false;
  st.offerers[c.card][c.key] = c.name;
  auto slot = st.slots.find(c.card);
  if (slot == st.slots.end()) {
    auto device = slot_key::parse(c.key).device;
    st.configs[c.card] = card_ledger::config{c.name, c.context_bytes,
                                             c.context_name.empty() ? policy::context_name(device) : c.context_name,
                                             policy::budget_refusal(device)};
    slot = st.slots.emplace(c.card, spawn_slot(self, c.card, {c.key})).first;
  } else {
    rename(self, c.card);  // a second offerer of the card: one ledger, the runs through both on it
  }
  st.cards.emplace(c.key, shared_key{c.card, slot->second});
  for (std::size_t i = 0; i < c.holders.size(); ++i) {
    auto budget = i < c.budgets.size() ? c.budgets[i] : 0;
    if (budget > 0)
      self->send(slot->second, atoms::adopt::value, c.holders[i], budget);
    else
      self->send(slot->second, atoms::hold::value, c.holders[i]);
    auto& on = st.runs[c.holders[i]];
    if (std::find(on.cards.begin(), on.cards.end(), c.card) == on.cards.end())
      on.cards.push_back(c.card);
    on.budget = budget;
    on.started = true;
  }
  if (st.cfg.probe)
    if (auto figures = st.cfg.probe(c.key))
      self->send(slot->second, atoms::report::value, figures->first, figures->second);
  return true;
}

} // namespace

memory_ledger_actor::behavior_type memory_ledger(self_ptr self, memory_ledger_config cfg) {
  self->state.cfg = std::move(cfg);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& slots = self->state.slots;
    auto i = std::find_if(slots.begin(), slots.end(),
                          [&](const auto& s) { return s.second.address() == down.source; });
    if (i == slots.end())  // an unshared card's slot was erased before it was told to quit
      return;
    try {
      replace_slot(self, i->first, down.reason);
    } catch (const std::exception& e) {
      spdlog::error("memory ledger: the slot of card {} could not be replaced: {}", i->first, e.what());
    }
  });
  if (self->state.cfg.probe)
    self->delayed_send(self, self->state.cfg.probe_interval, atoms::tick::value);
  return guarded_typed_behavior<memory_ledger_actor>(
    "memory ledger",
    [=](atoms::attach, const run_queue_actor& queue) { self->state.queue = queue; },
    [=](atoms::share, const card_share& c) { return share(self, c); },
    [=](atoms::ask, const memory_ask& ask) -> caf::result<memory_answer> {
      // One card: its slot judges, reserves and answers the asker itself (one message fewer).
      if (!ask.any_of && ask.keys.size() == 1)
        if (const auto* card = shared_card(self->state, ask.keys.front())) {
          // Released there whatever the answer (a no-op if refused).
          self->state.runs[ask.run_id] = {{card->card}, ask.budget, false};
          return self->delegate(card->slot, atoms::ask::value, ask);
        }
      auto job = std::make_shared<ask_job>();
      job->run = ask.run_id;
      job->request = policy::request_of(ask);
      job->keys = ask.keys;
      job->promise = self->make_response_promise<memory_answer>();
      auto promise = job->promise;
      job->whole_set = !ask.any_of && ask.keys.size() > 1;
      if (job->whole_set)
        judge_from(self, job, 0);
      else
        reserve_from(self, job, 0);
      return promise;
    },
    [=](atoms::started, const std::string& run) {
      auto i = self->state.runs.find(run);
      if (i == self->state.runs.end())
        return;
      auto& place = i->second;
      place.started = true;
      // Adopted rather than started: the same for a slot that reserved it, and a replaced slot,
      // which never saw its grant, counts it too.
      for (const auto& card : place.cards)
        if (auto s = self->state.slots.find(card); s != self->state.slots.end()) {
          if (place.budget > 0)
            self->send(s->second, atoms::adopt::value, run, place.budget);
          else
            self->send(s->second, atoms::started::value, run);
        }
    },
    [=](atoms::released, const std::string& run) {
      auto i = self->state.runs.find(run);
      if (i == self->state.runs.end())
        return;
      release_on(self, run, i->second.cards);
      self->state.runs.erase(i);
    },
    [=](atoms::report, const std::string& key, std::int64_t total, std::int64_t free) {
      if (const auto* card = shared_card(self->state, key))
        self->send(card->slot, atoms::report::value, total, free);
    },
    [=](atoms::context, const std::string& card, std::int64_t bytes, const std::string& name) {
      // Kept for a slot that replaces this one, and counted by the card's runs from now on.
      auto& st = self->state;
      if (auto c = st.configs.find(card); c != st.configs.end()) {
        c->second.context_bytes = bytes;
        c->second.context_name = name;
      }
      if (auto slot = st.slots.find(card); slot != st.slots.end())
        self->send(slot->second, atoms::context::value, bytes, name);
    },
    [=](atoms::memory_freed, const std::string& card) {
      // Room on the card is room for the runs waiting at each key that shares it.
      auto& st = self->state;
      if (!st.queue)
        return;
      if (auto offerers = st.offerers.find(card); offerers != st.offerers.end())
        for (const auto& [key, name] : offerers->second)
          self->send(st.queue, atoms::memory_freed::value, key);
    },
    [=](atoms::tick) {
      auto& st = self->state;
      for (const auto& [key, card] : st.cards)
        if (auto figures = st.cfg.probe(key))
          self->send(card.slot, atoms::report::value, figures->first, figures->second);
      self->delayed_send(self, st.cfg.probe_interval, atoms::tick::value);
    },
    [=](atoms::get, const std::string& key) {
      const auto* card = shared_card(self->state, key);
      return card ? card->slot : device_slot_actor{};
    },
    [=](atoms::status) {
      return gather_status<card_memory_status>(
        self, memory_ledger_status{self->mailbox().size(), {}}, self->state.slots,
        std::chrono::seconds(5),
        [](memory_ledger_status& all, card_memory_status card) { all.cards.push_back(std::move(card)); },
        [](memory_ledger_status& all) {
          std::sort(all.cards.begin(), all.cards.end(),
                    [](const auto& a, const auto& b) { return a.key < b.key; });
        });
    });
}

} // namespace cdui::actors
