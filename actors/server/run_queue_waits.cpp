// The run queue's part that says why a queued run waits (the run object's waiting_reason, the
// REASON of `cdui runs`). See run_queue_parts.hpp.
#include "actors/server/run_queue_parts.hpp"

#include <algorithm>
#include <set>

#include "actors/policy/card_groups.hpp"
#include "actors/policy/memory_budget.hpp"
#include "actors/policy/placement.hpp"
#include "messages/clock.hpp"
#include "messages/slot_key.hpp"

namespace cdui::actors {

using namespace queue_parts;

namespace {

using kind = policy::wait_cause::kind;

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ", ") + item;
  return out;
}

/// "run 1a2b3c4d" or "runs 1a2b3c4d, 5e6f7a8b".
std::string runs_text(const std::vector<std::string>& ids) {
  return (ids.size() == 1 ? "run " : "runs ") + joined(ids);
}

/// How a worker whose slots admit no runs is, after its name ("w1 is draining").
std::string closed_text(const policy::known_worker& w) {
  switch (w.closed) {
  case worker_availability::draining: return "is draining";
  case worker_availability::late: return "is late with its heartbeats";
  case worker_availability::disabled: return "is disabled";
  case worker_availability::busy_one_shot: return "is a one-shot worker busy with its single run";
  case worker_availability::open: return "admits no runs on this device now";
  case worker_availability::disconnected: break;
  }
  return "is not connected";
}

/// A run held by a closed key: its worker is away, late or draining (the operator may undrain it).
std::string closed_reason(const run_queue_state& st, const std::string& key) {
  auto at = slot_key::parse(key);
  if (at.local())
    return "waits for " + key + ", which admits no runs now";
  auto w = st.workers.find(at.offerer);
  std::string which = "waits for worker '" + at.offerer + "', which ";
  if (w == st.workers.end())
    return which + "has not connected since the server started";
  auto reason = which + closed_text(w->second);
  if (w->second.closed == worker_availability::draining)
    reason += " (undrain it with cdui workers undrain " + at.offerer + ")";
  return reason;
}

/// A run whose shared budget is full: the card other offerers offer too, or a one-shot worker's.
std::string group_reason(const run_queue_state& st, const policy::wait_cause& why) {
  if (auto worker = policy::one_shot_worker(why.group); !worker.empty())
    return "; one-shot worker '" + worker + "' executes " + runs_text(why.holders) + ", its single run";
  std::vector<std::string> others;
  for (const auto& key : st.slots.group_keys(why.group))
    if (key != why.key)
      others.push_back(card_name(key));
  return "; its card (shared with " + joined(others) + ") is taken by " + runs_text(why.holders)
         + " (running)";
}

/// A run in a device's queue, from what holds it there (policy::admission::why_waiting). The key
/// comes first: `cdui runs` shows the first 100 characters.
std::string queued_reason(const run_queue_state& st, const policy::wait_cause& why) {
  if (why.what == kind::closed)
    return closed_reason(st, why.key);
  // A device set that holds its place on other keys says so first, and which key it waits for.
  auto reason = why.reserving.empty()
                  ? "position " + std::to_string(why.position) + " in the queue of " + why.key
                  : "reserves " + joined(why.reserving) + " until " + why.key + " is free: position "
                      + std::to_string(why.position) + " there";
  switch (why.what) {
  case kind::behind:
    reason += ", behind run " + why.front + " (waiting)";
    if (why.position > 2)
      reason += " and " + std::to_string(why.position - 2) + " more";
    break;
  case kind::reserved:
    reason += ", reserved by run " + why.front + " (a device set) until " + why.waits_for + " is free";
    break;
  case kind::full: reason += ", behind " + runs_text(why.holders) + " (running)"; break;
  case kind::group_full: reason += group_reason(st, why); break;
  case kind::memory: reason += ", waiting for the memory ledger's answer"; break;
  case kind::closed:
  case kind::none: return "";
  }
  return reason;
}

/// A run for any worker or the pool: it takes the first slot of its kind that would start it at
/// once (place_floating), so it waits while every one is busy, or none is open.
std::string floating_reason(const run_queue_state& st, const run_record& record) {
  if (record.ask && !record.ask->answered) {
    std::vector<std::string> cards;
    for (const auto& key : record.ask->cards)
      cards.push_back(card_name(key));
    return "waits for the memory ledger's answer on " + joined(cards);
  }
  const auto& run = *record.floating;
  if (!run.devices.empty())  // a set: one worker with every card of it free
    return "waits for a worker that takes runs with all of " + joined(run.devices) + " free";
  auto what = (run.kind.empty() ? std::string{"accelerator"} : run.kind + " slot")
              + (run.pool ? " on a one-shot worker" : "");
  auto a_what = (run.kind.empty() ? "an " : "a ") + what;
  if (!policy::candidate_slots(run, st.workers, st.local).empty())
    return "waits for a free " + what + ": every one is busy";
  // Only workers that are away or closed offer one: say which, and how each is.
  std::set<std::string> names;
  for (const auto& key : policy::candidate_slots(run, st.workers, st.local, false))
    if (!key.local())
      names.insert(key.offerer);
  if (names.empty())
    return "waits for a worker that offers " + a_what + " to connect";
  std::vector<std::string> closed;
  for (const auto& name : names)
    closed.push_back(name + " " + closed_text(st.workers.at(name)));
  return "waits for " + a_what + ": every worker that offers one is closed (" + joined(closed) + ")";
}

} // namespace

std::string queue_parts::waiting_reason(const run_queue_state& st, const std::string& id) {
  const auto* run = find_run(st, id);
  if (run && run->memory_wait) {
    // A budget the queue raised or gave while the run waited says so.
    const auto& b = run->budget;
    if (!b || b->note.empty() || b->bytes == 0)
      return *run->memory_wait;
    return *run->memory_wait + " (its budget of " + policy::gib_text(b->bytes) + " is " + b->note + ")";
  }
  if (run && run->floating)
    return floating_reason(st, *run);
  return queued_reason(st, st.slots.why_waiting(id));
}

namespace {

/// A run held by a closed key, in a word: its worker is away, draining, or closed otherwise.
std::string closed_kind(const run_queue_state& st, const std::string& key) {
  auto at = slot_key::parse(key);
  if (at.local())
    return "device_closed";
  auto w = st.workers.find(at.offerer);
  if (w == st.workers.end())
    return "worker_away";
  switch (w->second.closed) {
  case worker_availability::draining: return "worker_draining";
  case worker_availability::late:
  case worker_availability::disconnected: return "worker_away";
  default: return "worker_closed";
  }
}

} // namespace

std::string queue_parts::waiting_kind(const run_queue_state& st, const std::string& id) {
  const auto* record = find_run(st, id);
  if (record && record->memory_wait)
    return "memory";
  if (record && record->floating) {
    if (record->ask && !record->ask->answered)
      return "memory";
    const auto& run = *record->floating;
    if (!policy::candidate_slots(run, st.workers, st.local).empty())
      return "no_free_slot";
    return "no_worker";
  }
  auto why = st.slots.why_waiting(id);
  switch (why.what) {
  case kind::closed: return closed_kind(st, why.key);
  case kind::behind: return "queue";
  case kind::reserved: return "reservation";
  case kind::full: return "card_busy";
  case kind::group_full: return "shared_card_busy";
  case kind::memory: return "memory";
  case kind::none: break;
  }
  return "starting";
}

void queue_parts::note_started(run_queue_state& st, const std::string& id) {
  auto* run = find_run(st, id);
  if (!run)
    return;
  if (auto waited = st.runs.start(*run, now_ms()))
    st.queue_waits.observe(static_cast<double>(*waited) / 1000.0);
}

} // namespace cdui::actors
