#include "sim/simulator.hpp"

#include <algorithm>
#include <stdexcept>

#include "actors/policy/memory_budget.hpp"
#include "sim/simulator_state.hpp"

namespace cdui::sim {

namespace {

std::vector<std::size_t> workers_of(const cluster_layout& layout) {
  std::vector<std::size_t> out;
  for (const auto& c : layout.cards)
    out.push_back(c.worker);
  return out;
}

std::vector<int> positions_of(const cluster_layout& layout) {
  std::vector<int> out;
  for (const auto& c : layout.cards)
    out.push_back(c.position);
  return out;
}

} // namespace

simulator::state::state(const cluster_spec& c, const policy_spec& p, sim_options o)
    : cluster(c), policy(p), opt(o), layout(lay_out(c)), shared(p.mode == sharing::by_memory),
      index(workers_of(layout), positions_of(layout)), floating(0) {
  const auto n = layout.cards.size();
  ledgers.resize(n);
  use.resize(n);
  dirty_flag.assign(n, 0);
  // The run queue's setup of a worker's slots (worker_update): each key's limit, then the shared
  // budgets of cards offered twice (none here: every card has a UUID of its own).
  for (std::size_t i = 0; i < n; ++i) {
    const auto& card = layout.cards[i];
    card_of_key.emplace(card.key, i);
    slot_key key{layout.worker_names[card.worker], card.device};
    slots.set_limit(card.key, policy::worker_slot_limit(key, card.uuid, {}, local, slots));
  }
  (void)groups.regroup(slots, local, layout.workers, "");
  // Shared by memory (apply_share): 64 runs by count, each admitted by the card's ledger, told its
  // figures as a worker's heartbeat tells them.
  if (shared)
    for (std::size_t i = 0; i < n; ++i) {
      const auto& card = layout.cards[i];
      slots.set_limit(card.key, policy::shared_slot_limit);
      slots.set_gated(card.key, true);
      auto name = policy::card_name({card.device + " on " + layout.worker_names[card.worker]});
      ledgers[i].emplace(policy::card_ledger::config{name, opt.context_bytes, policy::context_name(card.device),
                                                     policy::budget_refusal(card.device)});
      ledgers[i]->report(card.bytes, card.bytes);
    }
  for (const auto& name : layout.worker_names)
    single_worker.push_back({{name, layout.workers.at(name)}});
  for (std::size_t i = 0; i < n; ++i)
    touch(i);
  refresh();
}

std::vector<std::string> simulator::state::keys_of(const std::vector<std::size_t>& cards) const {
  std::vector<std::string> out;
  for (auto c : cards)
    out.push_back(layout.cards[c].key);
  return out;
}

void simulator::state::touch(std::size_t card) {
  if (opt.literal || dirty_flag[card])
    return;
  dirty_flag[card] = 1;
  dirty.push_back(card);
}

void simulator::state::refresh() {
  for (auto c : dirty) {
    dirty_flag[c] = 0;
    auto room = !slots.idle(layout.cards[c].key) ? card_index::not_idle
                : ledgers[c]                    ? ledgers[c]->may_take()
                                                : card_index::by_count;
    index.set(c, room);
  }
  dirty.clear();
}

void simulator::state::advance(std::int64_t t) {
  // Averaged over the trace's submits (first to last): after them the queue only drains.
  auto until = jobs.back().arrival > jobs.front().arrival ? std::min(t, jobs.back().arrival) : t;
  auto span = static_cast<double>(std::max<std::int64_t>(0, until - now));
  peak_byte_seconds += span * static_cast<double>(peaks_in_use);
  busy_card_seconds += span * static_cast<double>(busy_cards);
  now = t;
}

void simulator::state::submit(std::size_t j) {
  const auto& job = jobs[j];
  auto& o = out[j];
  o.budget = budget_of(job, j, policy, opt.seed);
  ++queued;
  if (job.cards > cluster.most_cards()) {
    // No worker offers the whole set: place() refuses it at submit.
    refuse(j);
    return;
  }
  if (job.cards > 1 && opt.sets_named) {
    live[j].cards = named_set(j);
    slots.enqueue(run_name(j), keys_of(live[j].cards));
    for (auto c : live[j].cards)
      touch(c);
    return;
  }
  float_job(j);
}

void simulator::state::pump() {
  // The run queue's pump(): place the floating runs, start what admission lets start, hand the
  // runs at the front of shared cards to the ledger; an answer that starts or refuses a run pumps
  // again, as the ledger's answer does.
  for (;;) {
    bool moved = (opt.literal ? place_literal(table) : place_indexed()) > 0;
    for (const auto& id : slots.admit()) {
      start(run_index(id));
      moved = true;
    }
    for (const auto& id : slots.take_asks())
      moved |= ask_memory(run_index(id));
    if (!moved)
      return;
  }
}

void simulator::state::settle() {
  for (;;) {
    pump();
    if (victims.empty())
      return;
    auto failing = std::move(victims);
    victims.clear();
    for (auto j : failing)
      if (out[j].how == job_outcome::state::running)
        finish(j, job_outcome::state::oom);
  }
}

void simulator::state::start(std::size_t j) {
  const auto& job = jobs[j];
  auto& o = out[j];
  auto& run = live[j];
  --queued;
  ++running;
  ++decisions;
  o.how = job_outcome::state::running;
  o.start = now;
  o.card = static_cast<std::int64_t>(run.cards.front());
  run.end_at = now + job.duration;
  ends.push({run.end_at, j});
  const auto id = run_name(j);
  for (auto c : run.cards) {
    auto& u = use[c];
    u.used += job.peak + opt.context_bytes;
    u.peaks += job.peak;
    peaks_in_use += job.peak;
    busy_cards += u.runs.empty();
    u.runs.push_back(j);
    if (auto& ledger = ledgers[c]) {
      ledger->start(id);  // memory_started: the granted budget counts as running
      if (opt.free_from_usage)
        ledger->report(layout.cards[c].bytes, layout.cards[c].bytes - u.used);
    }
    touch(c);
  }
  // A run holds more than it was admitted with: its budget, or under Exclusive the whole card.
  auto over = [&](std::size_t r, std::size_t c) {
    auto allowed = out[r].budget > 0 ? out[r].budget : layout.cards[c].bytes - opt.context_bytes;
    return jobs[r].peak > allowed;
  };
  if (opt.oom == sim_options::oom_rule::cap) {
    if (o.budget > 0 && job.peak > o.budget && !run.failing) {
      run.failing = true;
      victims.push_back(j);
    }
    return;
  }
  for (auto c : run.cards) {
    const auto& u = use[c];
    auto excess = u.used - layout.cards[c].bytes;
    for (auto r = u.runs.rbegin(); excess > 0 && r != u.runs.rend(); ++r) {
      if (!over(*r, c))
        continue;
      if (!live[*r].failing) {
        live[*r].failing = true;
        victims.push_back(*r);
      }
      excess -= jobs[*r].peak + opt.context_bytes;
    }
  }
}

void simulator::state::finish(std::size_t j, job_outcome::state how) {
  const auto& job = jobs[j];
  auto& run = live[j];
  --running;
  out[j].how = how;
  out[j].end = now;
  run.end_at = -1;
  const auto id = run_name(j);
  for (auto c : run.cards) {
    auto& u = use[c];
    u.used -= job.peak + opt.context_bytes;
    u.peaks -= job.peak;
    peaks_in_use -= job.peak;
    u.runs.erase(std::find(u.runs.begin(), u.runs.end(), j));
    busy_cards -= u.runs.empty();
    if (auto& ledger = ledgers[c]) {
      // The device slot's release and the next heartbeat; either that leaves more room tells the
      // queue (memory_freed): the runs told to wait there are asked again.
      auto before = ledger->available();
      bool released = ledger->release(id);
      if (opt.free_from_usage)
        ledger->report(layout.cards[c].bytes, layout.cards[c].bytes - u.used);
      if (released || ledger->available() > before) {
        slots.ask_again(layout.cards[c].key);
        if (opt.literal)
          table.ask_again();
      }
    }
    touch(c);
  }
  slots.release(id);
}

simulator::simulator(const cluster_spec& cluster, const policy_spec& policy, sim_options options)
    : st_(std::make_unique<state>(cluster, policy, options)) {}

simulator::~simulator() = default;

void simulator::load(const trace& jobs) {
  if (!st_->jobs.empty())
    throw std::logic_error("simulator: a trace is loaded already");
  if (!std::is_sorted(jobs.begin(), jobs.end(),
                      [](const job& a, const job& b) { return a.arrival < b.arrival; }))
    throw std::invalid_argument("simulator: the trace is not in arrival order");
  st_->jobs = jobs;
  st_->out.assign(jobs.size(), {});
  st_->live.assign(jobs.size(), {});
  st_->floating = floating_runs(jobs.size());
  if (!jobs.empty())
    st_->now = jobs.front().arrival;
}

bool simulator::step() {
  auto& st = *st_;
  bool submits = st.next_submit < st.jobs.size();
  if (st.ends.empty() && !submits)
    return false;
  // A run that ends frees its card before a submit of the same second is placed.
  if (!st.ends.empty() && (!submits || st.ends.top().time <= st.jobs[st.next_submit].arrival)) {
    auto e = st.ends.top();
    st.ends.pop();
    if (st.live[e.job].end_at != e.time || st.out[e.job].how != job_outcome::state::running)
      return true;  // it failed before (out of memory)
    st.advance(e.time);
    st.finish(e.job, job_outcome::state::done);
  } else {
    st.advance(st.jobs[st.next_submit].arrival);
    st.submit(st.next_submit++);
  }
  st.settle();
  return true;
}

void simulator::run() {
  while (step()) {
  }
}

std::int64_t simulator::now() const { return st_->now; }
std::size_t simulator::queued() const { return st_->queued; }
std::size_t simulator::running() const { return st_->running; }
const std::vector<job_outcome>& simulator::outcomes() const { return st_->out; }

summary simulator::result() const {
  const auto& st = *st_;
  auto s = summarize(st.policy.name, st.jobs, st.out, st.peak_byte_seconds, st.busy_card_seconds,
                     st.cluster.memory(), st.cluster.cards());
  s.decisions = st.decisions;
  s.card_verdicts = st.card_verdicts;
  return s;
}

} // namespace cdui::sim
