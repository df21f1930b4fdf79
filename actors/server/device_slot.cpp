#include "actors/server/device_slot.hpp"

#include <caf/all.hpp>

#include "actors/common/guarded.hpp"
#include "actors/policy/memory_budget.hpp"

namespace cdui::actors {

namespace {

using self_ptr = device_slot_actor::stateful_pointer<device_slot_state>;

/// New figures for the card; the supervisor hears when they leave more room than before.
void report(self_ptr self, std::int64_t total, std::int64_t free) {
  auto& st = self->state;
  auto before = st.ledger->reported() ? st.ledger->available() : -1;
  st.ledger->report(total, free);
  if (st.ledger->available() > before)
    self->send(st.supervisor, atoms::memory_freed::value, st.card);
}

card_memory_status status_of(const device_slot_state& st) {
  const auto& l = *st.ledger;
  card_memory_status out{st.offerers.empty() ? st.card : st.offerers.front(), st.offerers,
                         l.settings().name, l.reported(), l.total(), l.free(), l.reserved(),
                         l.running(), l.may_take(), l.settings().context_bytes, l.settings().context_name, {}};
  for (const auto& run : l.runs())
    out.runs.push_back({run.run_id, run.budget, run.running});
  return out;
}

} // namespace

device_slot_actor::behavior_type device_slot(self_ptr self, std::string card,
                                             std::vector<std::string> offerers,
                                             policy::card_ledger::config cfg,
                                             memory_ledger_actor supervisor) {
  self->state.card = std::move(card);
  self->state.offerers = std::move(offerers);
  self->state.ledger.emplace(std::move(cfg));
  self->state.supervisor = supervisor;
  self->monitor(supervisor);
  self->set_down_handler([=](const caf::down_msg& down) { self->quit(down.reason); });
  return guarded_typed_behavior<device_slot_actor>(
    "device slot",
    [=](atoms::share, const std::string& name, const std::vector<std::string>& offerers) {
      self->state.ledger->rename(name);
      self->state.offerers = offerers;
    },
    [=](atoms::report, std::int64_t total, std::int64_t free) { report(self, total, free); },
    [=](atoms::context, std::int64_t bytes, const std::string& name) {
      // A smaller context than counted so far leaves room for the runs that wait.
      auto& st = self->state;
      auto before = st.ledger->may_take();
      st.ledger->set_context(bytes, name);
      if (st.ledger->may_take() > before)
        self->send(st.supervisor, atoms::memory_freed::value, st.card);
    },
    [=](atoms::ask, std::int64_t budget) {
      auto v = self->state.ledger->judge(budget);
      return memory_verdict{static_cast<int>(v.answer), v.reason};
    },
    [=](atoms::ask, const memory_ask& ask) {
      // A run for this card alone (through its one key, an offerer's), delegated by the ledger:
      // judged, reserved when it fits, and answered to the run queue directly.
      auto& st = self->state;
      auto v = st.ledger->try_reserve(ask.run_id, ask.budget);
      auto d = policy::decide_verdicts({v}, policy::request_of(ask));  // one card: any_of is false
      if (d.answer == policy::memory_decision::kind::grant)
        return memory_answer{static_cast<int>(d.answer), ask.keys, ""};
      return memory_answer{static_cast<int>(d.answer), {}, d.reason};
    },
    [=](atoms::reserve, const std::string& run, std::int64_t budget) {
      auto v = self->state.ledger->try_reserve(run, budget);
      return memory_verdict{static_cast<int>(v.answer), v.reason};
    },
    [=](atoms::hold, const std::string& run) { self->state.ledger->hold(run); },
    [=](atoms::adopt, const std::string& run, std::int64_t budget) {
      // Running already (adopted after a restart, or on the card when it turned shared): it counts.
      self->state.ledger->reserve(run, budget);
      self->state.ledger->start(run);
    },
    [=](atoms::started, const std::string& run) { self->state.ledger->start(run); },
    [=](atoms::released, const std::string& run) {
      // Any run that leaves may make room: a budget freed, or a run without one that held the card.
      if (self->state.ledger->release(run))
        self->send(self->state.supervisor, atoms::memory_freed::value, self->state.card);
    },
    [=](atoms::status) { return status_of(self->state); });
}

} // namespace cdui::actors
