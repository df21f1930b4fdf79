// The run queue's part for sweeps: a sweep's runs are queued all together or not at all.

#include <memory>

#include <caf/all.hpp>

#include "actors/policy/placement.hpp"
#include "actors/policy/sweep_budgets.hpp"
#include "actors/server/run_queue_parts.hpp"
#include "messages/clock.hpp"

namespace cdui::actors {

using namespace queue_parts;

namespace {

sweep_submit_result sweep_refusal(std::string why, bool unavailable = false) {
  sweep_submit_result r;
  r.error = std::move(why);
  r.unavailable = unavailable;
  return r;
}

/// A sweep whose variants were all checked, waiting for the memory ledger's figures.
struct checked_sweep {
  sweep_submission submission;
  std::vector<prepared_run> ready;
};

/// What the memory ledger would judge of each variant that has a budget and may go to a card
/// shared by memory; an empty list when none may.
std::vector<policy::variant_budget> shared_budgets(const run_queue_state& st, const checked_sweep& s,
                                                   std::vector<std::size_t>& variant_of) {
  std::vector<policy::variant_budget> out;
  for (std::size_t i = 0; i < s.ready.size(); ++i) {
    const auto& req = s.submission.runs[i];
    const auto& p = s.ready[i];
    if (req.memory_bytes <= 0)
      continue;
    policy::variant_budget v;
    v.budget = req.memory_bytes;
    if (req.has_wait)
      v.wait = req.wait;
    if (p.floating) {
      v.any_of = true;
      for (const auto& key : policy::candidate_slots(*p.floating, st.workers, st.local, false)) {
        if (st.slots.gated(key.str()))
          v.keys.push_back(key.str());
        else
          v.by_count_too = true;
      }
    } else {
      for (const auto& key : p.keys)
        if (st.slots.gated(key))
          v.keys.push_back(key);
    }
    if (v.keys.empty())
      continue;
    out.push_back(std::move(v));
    variant_of.push_back(i);
  }
  return out;
}

/// Records every run of a checked sweep in one transaction and queues them.
sweep_submit_result record_sweep(self_ptr self, checked_sweep& s) {
  auto& st = self->state;
  if (st.shutting_down)
    return sweep_refusal("the server is shutting down; submit the sweep again once it has restarted", true);
  auto& runs = s.submission.runs;
  sweep_submit_result answer;
  answer.sweep_id = s.submission.sweep.id;
  std::vector<storage::stored_run> rows;
  rows.reserve(s.ready.size());
  try {
    // Ids the store has already are drawn again as each run is recorded (inside the transaction).
    for (std::size_t i = 0; i < s.ready.size(); ++i) {
      give_identity(st, s.ready[i], runs[i], new_run_id(st));
      rows.push_back({s.ready[i].setup.info, runs[i].graph_json});
    }
    // One transaction: a crash leaves the whole sweep recorded, or none of it.
    st.cfg.store->insert_sweep(s.submission.sweep, rows, s.submission.params, [&] { return new_run_id(st); });
  } catch (const std::exception& e) {
    return sweep_refusal(std::string{"the server cannot record the sweep: "} + e.what(), true);
  }
  for (std::size_t i = 0; i < s.ready.size(); ++i) {
    take_recorded_id(st, s.ready[i], rows[i].info.id);
    answer.run_ids.push_back(rows[i].info.id);
    launch(self, std::move(s.ready[i]), runs[i]);
  }
  pump(self);
  return answer;
}

} // namespace

caf::result<sweep_submit_result> queue_parts::submit_sweep(self_ptr self, sweep_submission& s) {
  auto& st = self->state;
  if (st.shutting_down)
    return sweep_refusal("the server is shutting down; submit the sweep again once it has restarted", true);
  record_submits(self);  // the runs submitted before it queue before it
  // Every variant is checked before anything is written: one refusal refuses the sweep whole.
  auto checked = std::make_shared<checked_sweep>();
  checked->ready.reserve(s.runs.size());
  for (std::size_t i = 0; i < s.runs.size(); ++i) {
    auto prepared = prepare_submit(st, s.runs[i]);
    if (auto* refused = std::get_if<submit_result>(&prepared))
      return sweep_refusal("variant " + std::to_string(i) + " " + s.params.at(i) + ": " + refused->error
                             + "; nothing was queued",
                           refused->unavailable);
    checked->ready.push_back(std::get<prepared_run>(std::move(prepared)));
  }
  checked->submission = std::move(s);
  auto variant_of = std::make_shared<std::vector<std::size_t>>();
  auto budgets = shared_budgets(st, *checked, *variant_of);
  if (budgets.empty())
    return record_sweep(self, *checked);
  // Budgets on cards shared by memory: judged now on the ledger's figures, all variants in order,
  // so that a child the ledger would refuse refuses the sweep instead of failing once queued.
  auto rp = self->make_response_promise<sweep_submit_result>();
  self->request(st.ledger, request_deadline, atoms::status::value)
    .then(
      [=](memory_ledger_status& ledger) mutable {
        if (auto refused = policy::first_refused_budget(ledger.cards, budgets)) {
          auto i = variant_of->at(refused->index);
          rp.deliver(sweep_refusal("variant " + std::to_string(i) + " " + checked->submission.params.at(i)
                                   + ": " + refused->reason + "; nothing was queued"));
          return;
        }
        rp.deliver(record_sweep(self, *checked));
      },
      [=](caf::error& e) mutable {
        rp.deliver(sweep_refusal("the memory ledger did not answer (" + caf::to_string(e)
                                   + "), so the sweep's budgets cannot be judged; nothing was queued",
                                 true));
      });
  return rp;
}

} // namespace cdui::actors
