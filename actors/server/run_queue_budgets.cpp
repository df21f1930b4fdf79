// The run queue's part in memory budgets (docs/http-api.md, "Cards shared by memory"): the budget a run for a
// shared card gets at submit, the peak a succeeded run leaves for its graph, and what that peak
// does to the runs of the same graph still waiting: a default budget for one that has none, a
// measured or estimated budget raised to it.
#include <algorithm>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/policy/memory_budget.hpp"
#include "actors/policy/placement.hpp"
#include "actors/server/run_queue_parts.hpp"
#include "messages/clock.hpp"

namespace cdui::actors::queue_parts {

namespace {

/// Whether the run may go to a card shared by memory, and whether every card it may use is one.
struct shared_use {
  bool any = false;
  bool only = false;
};

shared_use shared_cards_for(const run_queue_state& st, const prepared_run& p) {
  std::vector<std::string> keys = p.keys;
  if (p.floating)  // any card of its kind, on workers away now too
    for (const auto& key : policy::candidate_slots(*p.floating, st.workers, st.local, false))
      keys.push_back(key.str());
  auto shared = std::count_if(keys.begin(), keys.end(), [&](const auto& k) { return st.slots.gated(k); });
  return {shared > 0, shared > 0 && shared == static_cast<std::ptrdiff_t>(keys.size())};
}

/// The run's budget changed here: the queue judges it by the new one, and its actor runs with it
/// (its options, run object and store row say so, and a run_warning tells why).
void set_budget(run_record& run, const policy::run_budget& to) {
  auto& b = *run.budget;
  b.bytes = to.bytes;
  b.source = to.source;
  b.note = to.note;
  b.wants_default = false;
  caf::anon_send(run.actor, atoms::budget::value, to.bytes, std::string{to_string(to.source)}, to.note);
}

/// A run that waited without a budget at a card that turned shared gets its graph's default. It
/// was queued to wait its turn, so it keeps waiting when the budget does not fit yet (target.wait).
void given_default(run_record& run, const policy::run_budget& to) {
  run.budget->has_wait = true;
  run.budget->wait = true;
  set_budget(run, to);
}

} // namespace

std::string settle_budget(const run_queue_state& st, run_request& req, prepared_run& p) {
  auto shared = shared_cards_for(st, p);
  if (!shared.any || req.lane == run_lane::interactive)
    return "";
  std::optional<policy::measured_peak> peak;
  if (auto row = st.cfg.store->peak(p.memory_key, p.cards()))
    peak = policy::measured_peak{row->bytes, row->run_id};
  std::optional<std::int64_t> declared;
  if (req.memory_bytes > 0)
    declared = req.memory_bytes;
  // A run for any card that may take one by count goes without a budget to those.
  if (!declared && !peak && !shared.only)
    return "";
  auto settled = policy::resolve_budget(declared, policy::budget_source_of(req.memory_source), peak);
  if (auto* refusal = std::get_if<std::string>(&settled))
    return "option 'target.memory_gib': " + *refusal;
  const auto& b = std::get<policy::run_budget>(settled);
  // Kept in the run's options (and so on its object, in the store and on a worker): where the
  // budget came from travels with it.
  req.memory_bytes = b.bytes;
  req.memory_source = b.source == policy::budget_source::typed ? "" : std::string{to_string(b.source)};
  p.setup.context.memory_budget = b.bytes;
  p.setup.context.memory_budget_source = std::string{to_string(b.source)};
  if (!b.note.empty())
    p.warnings.emplace_back("memory_budget", "the run's memory budget is " + policy::gib_text(b.bytes)
                                               + " per card: " + b.note);
  return "";
}

void note_budget(run_record& run, const prepared_run& p, const run_request& req) {
  policy::queued_budget b;
  b.bytes = std::max<std::int64_t>(0, req.memory_bytes);
  b.source = policy::budget_source_of(req.memory_source);
  b.has_wait = req.has_wait;
  b.wait = req.wait;
  b.memory_key = p.memory_key;
  b.cards = p.cards();
  run.keys = p.keys;
  run.budget = std::move(b);
}

bool default_budget(self_ptr self, const std::string& id) {
  auto& st = self->state;
  auto& run = st.runs.at(run_id{id});
  auto& b = *run.budget;
  auto row = st.cfg.store->peak(b.memory_key, b.cards);
  if (!row) {
    b.wants_default = true;
    return false;
  }
  auto settled = policy::resolve_budget(std::nullopt, policy::budget_source::measured,
                                        policy::measured_peak{row->bytes, row->run_id});
  given_default(run, std::get<policy::run_budget>(settled));
  return true;
}

void record_peak(self_ptr self, const std::string& id) {
  auto& st = self->state;
  const auto* ended = find_run(st, id);
  if (!ended || !ended->budget)
    return;  // an interactive run
  auto stored = st.cfg.store->find(id);
  if (!stored || stored->info.status != run_status::succeeded)
    return;
  auto metrics = nlohmann::json::parse(stored->info.final_metrics, nullptr, false);
  std::int64_t bytes = 0;
  if (metrics.is_object())
    for (const auto& [node, values] : metrics.items())
      if (values.is_object() && values.contains("peak_memory_bytes") && values["peak_memory_bytes"].is_object())
        for (const auto& [device, b] : values["peak_memory_bytes"].items())
          if (b.is_number_integer())
            bytes = std::max(bytes, b.get<std::int64_t>());
  if (bytes <= 0)
    return;
  const auto key = ended->budget->memory_key;
  const auto cards = ended->budget->cards;
  st.cfg.store->put_peak(key, cards, {bytes, id, now_ms()});
  // The runs of the same graph on as many cards that wait: one without a budget gets its default,
  // a measured or estimated one smaller than the peak + 20% is raised to it; each is judged again.
  policy::measured_peak peak{bytes, id};
  for (auto& [other, run] : st.runs) {
    if (other.str() == id || run.started || !run.budget)
      continue;
    const auto& b = *run.budget;
    if (b.memory_key != key || b.cards != cards)
      continue;
    if (b.bytes == 0 && b.wants_default)
      given_default(run, std::get<policy::run_budget>(policy::resolve_budget(std::nullopt, policy::budget_source::measured, peak)));
    else if (auto to = b.bytes > 0 ? policy::raise_budget({b.bytes, b.source, b.note}, peak) : std::nullopt)
      set_budget(run, *to);
    else
      continue;
    // Told to wait: asked again at the next pump (an ask on its way is answered first).
    if (run.ask && run.ask->answered)
      run.ask.reset();
    for (const auto& k : run.keys)
      st.slots.ask_again(k);
  }
}

} // namespace cdui::actors::queue_parts
