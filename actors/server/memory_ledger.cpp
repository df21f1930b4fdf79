#include "actors/server/memory_ledger.hpp"

#include <memory>
#include <optional>

#include <caf/all.hpp>

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
  /// The cards that reserved the budget so far.
  std::vector<std::string> reserved;
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

/// The card's slot; none when the card is not shared (any more), which the job records as a card
/// that never fits.
std::optional<device_slot_actor> slot_for(self_ptr self, ask_job& job, const std::string& key) {
  auto i = self->state.slots.find(key);
  if (i != self->state.slots.end())
    return i->second;
  job.verdicts.push_back({card_ledger::fit::never, key + " is not shared by memory"});
  return std::nullopt;
}

void release_on(self_ptr self, const std::string& run, const std::vector<std::string>& keys) {
  for (const auto& key : keys)
    if (auto i = self->state.slots.find(key); i != self->state.slots.end())
      self->send(i->second, atoms::released::value, run);
}

void finish(self_ptr self, const std::shared_ptr<ask_job>& job) {
  auto decision = policy::decide_verdicts(job->verdicts, job->request);
  memory_answer answer{static_cast<int>(decision.answer), {}, decision.reason};
  if (decision.answer == policy::memory_decision::kind::grant) {
    answer.cards = job->reserved;
    self->state.runs[job->run] = job->reserved;
  } else {
    release_on(self, job->run, job->reserved);  // a device set that did not get every card
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
  auto slot = slot_for(self, *job, key);
  if (!slot) {
    reserve_from(self, job, i + 1);
    return;
  }
  auto on_verdict = [=](memory_verdict& v) {
    job->verdicts.push_back(verdict_of(v));
    if (job->verdicts.back().answer == card_ledger::fit::fits) {
      job->reserved.push_back(key);
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
  auto reply = self->request(*slot, request_deadline, atoms::reserve::value, job->run,
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
  auto slot = slot_for(self, *job, key);
  if (!slot) {
    judge_from(self, job, i + 1);
    return;
  }
  self->request(*slot, request_deadline, atoms::ask::value, job->request.budget)
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

bool share(self_ptr self, const std::string& key, const std::string& name, std::int64_t context,
           const std::vector<std::string>& holders, const std::vector<std::int64_t>& budgets,
           bool shared) {
  auto& st = self->state;
  auto i = st.slots.find(key);
  if (!shared) {
    if (i == st.slots.end())
      return false;
    caf::anon_send_exit(i->second, caf::exit_reason::user_shutdown);
    st.slots.erase(i);
    for (auto& [run, keys] : st.runs)
      keys.erase(std::remove(keys.begin(), keys.end(), key), keys.end());
    return true;
  }
  if (i != st.slots.end())
    return false;
  auto slot = self->spawn(device_slot, key,
                          card_ledger::config{name, context,
                                              policy::context_name(slot_key::parse(key).device)},
                          caf::actor_cast<memory_ledger_actor>(self));
  for (std::size_t i = 0; i < holders.size(); ++i) {
    auto budget = i < budgets.size() ? budgets[i] : 0;
    if (budget > 0)
      self->send(slot, atoms::adopt::value, holders[i], budget);
    else
      self->send(slot, atoms::hold::value, holders[i]);
    st.runs[holders[i]].push_back(key);
  }
  st.slots.emplace(key, slot);
  if (st.cfg.probe)
    if (auto figures = st.cfg.probe(key))
      self->send(slot, atoms::report::value, figures->first, figures->second);
  return true;
}

} // namespace

memory_ledger_actor::behavior_type memory_ledger(self_ptr self, memory_ledger_config cfg) {
  self->state.cfg = std::move(cfg);
  if (self->state.cfg.probe)
    self->delayed_send(self, self->state.cfg.probe_interval, atoms::tick::value);
  return guarded_typed_behavior<memory_ledger_actor>(
    "memory ledger",
    [=](atoms::attach, const run_queue_actor& queue) { self->state.queue = queue; },
    [=](atoms::share, const std::string& key, const std::string& name, std::int64_t context,
        const std::vector<std::string>& holders, const std::vector<std::int64_t>& budgets, bool shared) {
      return share(self, key, name, context, holders, budgets, shared);
    },
    [=](atoms::ask, const std::string& run, std::int64_t budget, const std::vector<std::string>& keys,
        bool any_of, bool has_wait, bool wait) -> caf::result<memory_answer> {
      // One card: its slot judges, reserves and answers the asker itself (one message fewer).
      if (!any_of && keys.size() == 1)
        if (auto slot = self->state.slots.find(keys.front()); slot != self->state.slots.end()) {
          self->state.runs[run] = keys;  // released there whatever the answer (a no-op if refused)
          return self->delegate(slot->second, atoms::ask::value, run, budget, has_wait, wait);
        }
      auto job = std::make_shared<ask_job>();
      job->run = run;
      job->request = {budget, has_wait ? std::optional<bool>{wait} : std::nullopt, any_of};
      job->keys = keys;
      job->promise = self->make_response_promise<memory_answer>();
      auto promise = job->promise;
      job->whole_set = !any_of && keys.size() > 1;
      if (job->whole_set)
        judge_from(self, job, 0);
      else
        reserve_from(self, job, 0);
      return promise;
    },
    [=](atoms::started, const std::string& run) {
      if (auto i = self->state.runs.find(run); i != self->state.runs.end())
        for (const auto& key : i->second)
          if (auto s = self->state.slots.find(key); s != self->state.slots.end())
            self->send(s->second, atoms::started::value, run);
    },
    [=](atoms::released, const std::string& run) {
      auto i = self->state.runs.find(run);
      if (i == self->state.runs.end())
        return;
      release_on(self, run, i->second);
      self->state.runs.erase(i);
    },
    [=](atoms::report, const std::string& key, std::int64_t total, std::int64_t free) {
      if (auto i = self->state.slots.find(key); i != self->state.slots.end())
        self->send(i->second, atoms::report::value, total, free);
    },
    [=](atoms::memory_freed, const std::string& key) {
      if (self->state.queue)
        self->send(self->state.queue, atoms::memory_freed::value, key);
    },
    [=](atoms::tick) {
      auto& st = self->state;
      for (const auto& [key, slot] : st.slots)
        if (auto figures = st.cfg.probe(key))
          self->send(slot, atoms::report::value, figures->first, figures->second);
      self->delayed_send(self, st.cfg.probe_interval, atoms::tick::value);
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
