// The run queue's part of a replay (actors/server/run_queue.cpp place_floating, run_queue_memory.cpp
// ask_memory and ask_floating, memory_ledger.cpp reserve_from and judge_from), with the ledger's
// answers given at once: where runs for any worker go, and what the ledger says of a budget.
#include <algorithm>
#include <stdexcept>

#include "actors/policy/memory_budget.hpp"
#include "sim/simulator_state.hpp"

namespace cdui::sim {

namespace {

/// The device set's places on a worker, a bit each: cuda:0..cuda:k-1.
std::uint64_t positions_of(int cards) {
  return cards >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << cards) - 1;
}

void check(bool holds, const char* what) {
  if (!holds)
    throw std::logic_error(std::string{"simulator: the index and the policy disagree: "} + what);
}

} // namespace

policy::floating_run simulator::state::floating_for(std::size_t j) const {
  policy::floating_run run;
  run.kind = "cuda";
  if (jobs[j].cards > 1)
    for (int c = 0; c < jobs[j].cards; ++c)
      run.devices.push_back("cuda:" + std::to_string(c));
  return run;
}

std::vector<std::size_t> simulator::state::named_set(std::size_t j) {
  const int k = jobs[j].cards;
  auto& order = blocks[k];
  if (order.empty()) {
    // Block-major: the first block of every worker, then the second, ...
    for (int block = 0; block * k < cluster.most_cards(); ++block)
      for (std::size_t w = 0; w < layout.worker_names.size(); ++w) {
        auto first = layout.first_card[w];
        auto has = (w + 1 < layout.first_card.size() ? layout.first_card[w + 1] : layout.cards.size()) - first;
        if (static_cast<std::size_t>((block + 1) * k) <= has)
          order.emplace_back(w, block * k);
      }
  }
  auto [w, position] = order[next_block++ % order.size()];
  std::vector<std::size_t> cards;
  for (int c = 0; c < k; ++c)
    cards.push_back(layout.first_card[w] + static_cast<std::size_t>(position + c));
  return cards;
}

void simulator::state::float_job(std::size_t j) {
  live[j].floats = true;
  const auto budget = out[j].budget;
  if (opt.literal) {
    auto& record = table.add(run_id{run_name(j)}, 0, j);
    policy::queued_budget b;
    b.bytes = budget;
    b.has_wait = true;
    b.wait = true;
    record.budget = b;
    table.float_run(record, floating_for(j));
    return;
  }
  if (jobs[j].cards > 1)
    floating.add_set(j, positions_of(jobs[j].cards));
  else if (budget > 0 && budget + opt.context_bytes > cluster.largest_card())
    floating.add_oversized(j);
  else
    floating.add_single(j, budget);
}

void simulator::state::unfloat(std::size_t j) {
  live[j].floats = false;
  floating.remove(j);
  table.erase(run_id{run_name(j)});
}

void simulator::state::refuse(std::size_t j) {
  if (live[j].floats)
    unfloat(j);
  --queued;
  ++decisions;
  out[j].how = job_outcome::state::refused;
  out[j].end = now;
}

void simulator::state::place_by_count(std::size_t j, const std::vector<slot_key>& keys) {
  unfloat(j);
  std::vector<std::string> texts;
  for (const auto& k : keys) {
    texts.push_back(k.str());
    live[j].cards.push_back(card_of_key.at(texts.back()));
    touch(live[j].cards.back());
  }
  // Queued where it would start at once: the admit() of this pump starts it.
  slots.enqueue(run_name(j), texts);
}

void simulator::state::start_placed(std::size_t j, std::size_t card) {
  unfloat(j);
  live[j].cards = {card};
  // Judged on a slot that would start it at once: it starts now, as admit() would.
  slots.hold(run_name(j), {layout.cards[card].key});
  start(j);
}

bool simulator::state::ask_memory(std::size_t j) {
  const auto id = run_name(j);
  const auto& cards = live[j].cards;
  policy::memory_request request{out[j].budget, true, false};
  std::vector<policy::card_ledger::verdict> verdicts;
  if (cards.size() == 1) {
    // One card: its slot judges and reserves at once.
    verdicts.push_back(ledgers[cards.front()]->try_reserve(id, out[j].budget));
  } else {
    // A device set: every card judged before any reserves (judge_from), then each reserves.
    for (auto c : cards)
      verdicts.push_back(ledgers[c]->judge(out[j].budget));
    if (std::all_of(verdicts.begin(), verdicts.end(),
                    [](const auto& v) { return v.answer == policy::card_ledger::fit::fits; })) {
      verdicts.clear();
      for (auto c : cards)
        verdicts.push_back(ledgers[c]->try_reserve(id, out[j].budget));
    }
  }
  card_verdicts += verdicts.size();
  for (auto c : cards)
    touch(c);
  switch (policy::decide_verdicts(verdicts, request).answer) {
  case policy::memory_decision::kind::grant:
    slots.grant(id);
    return true;
  case policy::memory_decision::kind::wait:
    slots.wait(id);
    ++decisions;
    return false;
  case policy::memory_decision::kind::refuse:
    slots.remove(id);
    refuse(j);
    return true;
  }
  return false;
}

bool simulator::state::ask_floating(std::size_t j, const std::vector<std::string>& keys, bool busy_others) {
  const auto id = run_name(j);
  // Judged as a run that may wait (any_of, target.wait true), card after card until one reserves.
  policy::memory_request request{out[j].budget, true, true};
  std::vector<policy::card_ledger::verdict> verdicts;
  std::optional<std::size_t> reserved;
  for (const auto& key : keys) {
    auto c = card_of_key.at(key);
    verdicts.push_back(ledgers[c]->try_reserve(id, out[j].budget));
    if (verdicts.back().answer == policy::card_ledger::fit::fits) {
      reserved = c;
      touch(c);
      break;
    }
  }
  card_verdicts += verdicts.size();
  auto d = policy::place_later(policy::decide_verdicts(verdicts, request), busy_others, true);
  switch (d.answer) {
  case policy::memory_decision::kind::grant:
    start_placed(j, *reserved);
    return true;
  case policy::memory_decision::kind::wait:
    ++decisions;
    return false;
  case policy::memory_decision::kind::refuse:
    refuse(j);
    return true;
  }
  return false;
}

std::size_t simulator::state::place_literal(policy::run_table<int>& runs, std::size_t most) {
  // place_floating(): each floating run, oldest first, on the first slot of its kind that would
  // start it at once by count, else (with a budget) the ledger over the shared ones, unless it was
  // told to wait for the same cards.
  std::size_t moved = 0;
  std::vector<run_id> order = runs.floating();
  if (order.size() > most)
    order.resize(most);
  for (const auto& queued_id : order) {
    auto* run = runs.find(queued_id);
    if (!run || !run->floating || (run->ask && !run->ask->answered))
      continue;
    const auto j = run_index(queued_id.str());
    auto free = policy::free_slots(*run->floating, out[j].budget > 0, layout.workers, local, slots);
    auto taken = !free.set.empty() ? free.set
                 : free.by_count     ? std::vector<slot_key>{*free.by_count}
                                     : std::vector<slot_key>{};
    if (!taken.empty()) {
      place_by_count(j, taken);
      ++moved;
    } else if (!free.by_memory.empty() && (!run->ask || run->ask->cards != free.by_memory)) {
      run->ask = policy::floating_ask{false, free.by_memory};
      if (ask_floating(j, free.by_memory, free.busy_others))
        ++moved;
      else
        run->ask->answered = true;
    }
  }
  return moved;
}

std::size_t simulator::state::place_indexed() {
  // The same decisions as place_literal(), found in O(log) each. Placing a run only takes room, so
  // a run that does not fit now fits no better later in this pass: the next run to move is the
  // oldest that fits now. The policy is then asked about that run on its worker alone.
  std::size_t moved = 0;
  for (;;) {
    refresh();
    enum class what { none, single, oversized, set } pick = what::none;
    std::size_t seq = SIZE_MAX;
    std::size_t worker = 0;
    if (auto s = floating.oldest_single(index.most()))
      std::tie(pick, seq) = std::pair{what::single, *s};
    // Larger than every card: refused once no slot it may use is busy (place_later), else it waits.
    if (auto o = floating.oldest_oversized(); o && *o < seq && index.busy() == 0)
      std::tie(pick, seq) = std::pair{what::oversized, *o};
    for (const auto& [positions, runs] : floating.sets())
      if (!runs.empty() && *runs.begin() < seq)
        if (auto w = index.first_worker_with(positions)) {
          std::tie(pick, seq) = std::pair{what::set, *runs.begin()};
          worker = *w;
        }
    if (pick == what::none)
      return moved;
    ++moved;
    const auto budget = out[seq].budget;
    if (pick == what::oversized) {
      check(ask_floating(seq, {layout.cards.front().key}, false), "an oversized run is not refused");
      continue;
    }
    std::size_t card = 0;
    if (pick == what::single) {
      card = *index.first_with(budget);
      worker = layout.cards[card].worker;
    }
    auto free = policy::free_slots(floating_for(seq), budget > 0, single_worker[worker], local, slots);
    if (pick == what::set) {
      check(!free.set.empty(), "no whole set on the worker");
      place_by_count(seq, free.set);
    } else if (budget == 0) {
      check(free.by_count && free.by_count->str() == layout.cards[card].key, "another card free by count");
      place_by_count(seq, {*free.by_count});
    } else {
      check(ask_floating(seq, free.by_memory, index.busy() > 0) && live[seq].cards.front() == card,
            "the ledger did not grant the card");
    }
  }
}

std::size_t simulator::literal_pass(std::size_t most) {
  auto& st = *st_;
  if (st.opt.literal) {
    auto n = st.place_literal(st.table, most);
    st.settle();
    return n;
  }
  // The floating runs as the run queue would hold them, none asked yet (as after memory freed).
  std::vector<std::size_t> seqs;
  for (std::size_t j = 0; j < st.live.size() && seqs.size() < most; ++j)
    if (st.live[j].floats)
      seqs.push_back(j);
  for (auto j : seqs) {
    auto& record = st.table.add(run_id{run_name(j)}, 0, j);
    policy::queued_budget b;
    b.bytes = st.out[j].budget;
    b.has_wait = b.wait = true;
    record.budget = b;
    st.table.float_run(record, st.floating_for(j));
  }
  auto n = st.place_literal(st.table);
  for (auto j : seqs)
    st.table.erase(run_id{run_name(j)});
  st.settle();
  return n;
}

} // namespace cdui::sim
