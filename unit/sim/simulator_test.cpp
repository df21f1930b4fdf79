// The cluster simulator (sim/simulator.hpp) on traces small enough to follow by hand: the schedule
// the real policy gives, start by start; the OOM rule; Exclusive and Shared alike when no two runs
// fit on a card; and the indexed placement against the run queue's literal one.
#include <boost/test/unit_test.hpp>

#include <vector>

#include "messages/run_request.hpp"
#include "sim/simulator.hpp"
#include "sim/trace_shapes.hpp"

using namespace cdui::sim;
using state = job_outcome::state;

namespace {

constexpr std::int64_t gib = static_cast<std::int64_t>(cdui::bytes_per_gib);

job run(std::int64_t at, int cards, std::int64_t peak_gib, std::int64_t seconds, std::int64_t typed_gib = 0) {
  return job{at, cards, peak_gib * gib, seconds, typed_gib * gib};
}

/// 2 workers x 2 cards of 10 GiB: cards 0, 1 are w0000/cuda:0, cuda:1; cards 2, 3 w0001's.
cluster_spec four_cards() { return std::get<cluster_spec>(cluster_spec::parse("2x2x10")); }

sim_options no_context() {
  sim_options o;
  o.context_bytes = 0;
  return o;
}

policy_spec typed() { return *policy_named("typed"); }

/// 20 runs, typed budgets (the peak, unless a smaller one is typed), worked through by hand below.
trace hand_trace() {
  trace t;
  for (int i = 0; i < 8; ++i)
    t.push_back(run(0, 1, 5, 100));  // J0-J7: two per card, all four cards full until 100
  t.push_back(run(10, 1, 6, 50));     // J8
  t.push_back(run(20, 1, 4, 50));     // J9
  t.push_back(run(30, 2, 8, 100));    // J10: a set, named to w0000's cuda:0 and cuda:1
  t.push_back(run(120, 1, 7, 100, 3));  // J11: typed 3 GiB, holds 7
  t.push_back(run(130, 1, 6, 100));   // J12
  t.push_back(run(140, 1, 2, 50, 1));   // J13: typed 1 GiB, holds 2
  t.push_back(run(141, 1, 3, 50, 1));   // J14: typed 1 GiB, holds 3
  t.push_back(run(200, 2, 9, 30));    // J15: a set, named to w0001's cards
  t.push_back(run(205, 1, 4, 10));    // J16
  t.push_back(run(260, 1, 1, 20));    // J17
  t.push_back(run(261, 1, 2, 19));    // J18
  t.push_back(run(262, 1, 12, 10));   // J19: larger than any card
  return t;
}

struct expected {
  std::int64_t start;
  std::int64_t card;
  state how;
  std::int64_t end;
};

const std::vector<job_outcome>& replay(simulator& sim, const trace& t) {
  sim.load(t);
  sim.run();
  return sim.outcomes();
}

} // namespace

BOOST_AUTO_TEST_SUITE(simulator_test)

BOOST_AUTO_TEST_CASE(a_small_trace_on_shared_cards_runs_as_worked_out_by_hand) {
  simulator sim{four_cards(), typed(), no_context()};
  const auto& out = replay(sim, hand_trace());
  // J0-J7 fill the cards two by two, in candidate order. J8 (6 GiB) and J9 (4 GiB) wait: no card
  // has room. J10, a set named to cards 0 and 1, waits at the front of their queues, asked again
  // each time memory frees there: so the floating J8 and J9 may not take cards 0 and 1 (they are
  // not idle). At 100 the eight end in id order: J10 gets cards 0 and 1 once J3 has left card 1;
  // J9 passes J8 on card 2 when J4 ends (4 GiB fit, 6 do not), J8 follows when J5 ends.
  // J11 (typed 3, holds 7) takes card 3, the first with 3 GiB; J12 (6) then waits: card 3's
  // heartbeat says 3 GiB free. J13 (typed 1, holds 2) takes card 0's last 2 GiB: 10 of 10 used,
  // no OOM. J14 (typed 1, holds 3) takes card 1 (card 0 reports nothing free): 11 GiB on 10,
  // and J14, the run over its budget there, fails at once. J12 starts on card 2 when J8 ends.
  // J15, a set named to cards 2 and 3, waits for J11 (220) and J12 (250); J16 meanwhile takes
  // card 0 (cards 2 and 3 are reserved). J17 and J18 share card 0; J19 asks for 12 GiB, more than
  // any card, and is refused: no card it may use is busy, so it could never wait for one.
  const std::vector<expected> want{
    {0, 0, state::done, 100},   {0, 0, state::done, 100},   {0, 1, state::done, 100},
    {0, 1, state::done, 100},   {0, 2, state::done, 100},   {0, 2, state::done, 100},
    {0, 3, state::done, 100},   {0, 3, state::done, 100},   {100, 2, state::done, 150},
    {100, 2, state::done, 150}, {100, 0, state::done, 200}, {120, 3, state::done, 220},
    {150, 2, state::done, 250}, {140, 0, state::done, 190}, {141, 1, state::oom, 141},
    {250, 2, state::done, 280}, {205, 0, state::done, 215}, {260, 0, state::done, 280},
    {261, 0, state::done, 280}, {-1, -1, state::refused, 262}};
  BOOST_REQUIRE_EQUAL(out.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    BOOST_TEST_CONTEXT("job " << i) {
      BOOST_TEST(out[i].start == want[i].start);
      BOOST_TEST(out[i].card == want[i].card);
      BOOST_TEST((out[i].how == want[i].how));
      BOOST_TEST(out[i].end == want[i].end);
    }
  }
  auto s = sim.result();
  BOOST_TEST(s.makespan == 280);
  // 19 started: 14 at once, then 20, 50, 70, 80, 90 s: the 10th is 0, the 19th 90.
  BOOST_TEST(s.wait_p50 == 0);
  BOOST_TEST(s.wait_p99 == 90);
  BOOST_TEST(s.oom == 1u);
  BOOST_TEST(s.over_budget == 3u);  // J11, J13, J14
  BOOST_TEST(s.refused == 1u);
  BOOST_TEST(s.done == 18u);
  BOOST_TEST(s.sets == 2u);
  BOOST_TEST(s.set_wait_p50 == 50);  // J15
  BOOST_TEST(s.set_wait_max == 70);  // J10
}

BOOST_AUTO_TEST_CASE(without_heartbeats_the_ledger_counts_budgets_only_and_the_run_over_its_budget_fails) {
  // Card 3's free figure stays 10 GiB: J12 (6) fits beside J11's budget of 3, but J11 holds 7:
  // 13 GiB on 10, and J11, over its budget, fails at 130.
  auto options = no_context();
  options.free_from_usage = false;
  simulator sim{four_cards(), typed(), options};
  const auto& out = replay(sim, hand_trace());
  BOOST_TEST((out[11].how == state::oom));
  BOOST_TEST(out[11].end == 130);
  BOOST_TEST(out[12].start == 130);
  BOOST_TEST(out[12].card == 3);
  BOOST_TEST((out[12].how == state::done));
}

BOOST_AUTO_TEST_CASE(under_the_cap_every_run_over_its_budget_fails_at_its_start) {
  auto options = no_context();
  options.oom = sim_options::oom_rule::cap;
  simulator sim{four_cards(), typed(), options};
  const auto& out = replay(sim, hand_trace());
  for (std::size_t i : {11u, 13u, 14u}) {
    BOOST_TEST_CONTEXT("job " << i) {
      BOOST_TEST((out[i].how == state::oom));
      BOOST_TEST(out[i].end == out[i].start);
    }
  }
  BOOST_TEST(sim.result().oom == 3u);
}

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_figures) {
  auto cluster = std::get<cluster_spec>(cluster_spec::parse("3x4x80"));
  auto jobs = generate({trace_shape::mix, 400, 1.5, 7}, cluster);
  simulator a{cluster, *policy_named("estimate30"), {}};
  simulator b{cluster, *policy_named("estimate30"), {}};
  a.load(jobs);
  a.run();
  b.load(generate({trace_shape::mix, 400, 1.5, 7}, cluster));
  b.run();
  auto x = a.result();
  auto y = b.result();
  BOOST_TEST(x.makespan == y.makespan);
  BOOST_TEST(x.wait_p50 == y.wait_p50);
  BOOST_TEST(x.oom == y.oom);
  BOOST_TEST(x.oom > 0u);  // ±30% estimates: some runs overflow their cards
  BOOST_TEST(x.memory_used == y.memory_used);
}

BOOST_AUTO_TEST_CASE(when_no_two_runs_fit_on_a_card_exclusive_and_shared_give_the_same_schedule) {
  auto cluster = std::get<cluster_spec>(cluster_spec::parse("3x4x80"));
  auto jobs = generate({trace_shape::whole, 300, 1.5, 3}, cluster);
  simulator exclusive{cluster, *policy_named("exclusive"), {}};
  exclusive.load(jobs);
  exclusive.run();
  std::size_t waited = 0;
  for (const auto& name : {"typed", "measured"}) {
    simulator shared{cluster, *policy_named(name), {}};
    shared.load(jobs);
    shared.run();
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const auto& x = exclusive.outcomes()[i];
      const auto& y = shared.outcomes()[i];
      BOOST_TEST_CONTEXT(name << ", job " << i) {
        BOOST_TEST(x.start == y.start);
        BOOST_TEST(x.card == y.card);
        BOOST_TEST(x.end == y.end);
        BOOST_TEST((y.how == state::done));
      }
      waited += x.start > jobs[i].arrival;
    }
    BOOST_TEST(shared.result().cards_busy == exclusive.result().cards_busy);
  }
  BOOST_TEST(waited > 100u);  // a busy trace: the queues matter
}

BOOST_AUTO_TEST_CASE(sharing_packs_small_runs_that_exclusive_queues) {
  // Four 1-GiB runs of 100 s on one 10-GiB card: shared by memory they run together, one at a time
  // by count they take 400 s.
  auto cluster = std::get<cluster_spec>(cluster_spec::parse("1x1x10"));
  trace jobs{run(0, 1, 1, 100), run(0, 1, 1, 100), run(0, 1, 1, 100), run(0, 1, 1, 100)};
  simulator exclusive{cluster, *policy_named("exclusive"), no_context()};
  simulator shared{cluster, typed(), no_context()};
  for (auto* sim : {&exclusive, &shared}) {
    sim->load(jobs);
    sim->run();
  }
  BOOST_TEST(exclusive.result().makespan == 400);
  BOOST_TEST(exclusive.result().wait_p99 == 300);
  BOOST_TEST(shared.result().makespan == 100);
  BOOST_TEST(shared.result().wait_p99 == 0);
}

BOOST_AUTO_TEST_CASE(the_indexed_placement_gives_the_run_queues_literal_schedule) {
  // The literal placement is the run queue's place_floating as written; the index must change
  // nothing but its cost, on every policy and both ways of placing device sets. Load 8: shared
  // cards fill too, so runs wait for memory, are refused, run out of it.
  auto cluster = std::get<cluster_spec>(cluster_spec::parse("2x4x40+1x8x80"));
  for (auto shape : {trace_shape::mix, trace_shape::bursts}) {
    auto jobs = generate({shape, 300, 8, 11}, cluster);
    for (bool named : {true, false})
      for (const auto& policy : standard_policies()) {
        sim_options indexed;
        indexed.sets_named = named;
        auto literal = indexed;
        literal.literal = true;
        simulator a{cluster, policy, indexed};
        simulator b{cluster, policy, literal};
        a.load(jobs);
        a.run();
        b.load(jobs);
        b.run();
        std::size_t waited = 0;
        for (std::size_t i = 0; i < jobs.size(); ++i) {
          const auto& x = a.outcomes()[i];
          const auto& y = b.outcomes()[i];
          BOOST_TEST_CONTEXT(to_string(shape) << " " << policy.name << (named ? " named" : " any") << ", job " << i) {
            BOOST_TEST(x.start == y.start);
            BOOST_TEST(x.card == y.card);
            BOOST_TEST((x.how == y.how));
            BOOST_TEST(x.end == y.end);
          }
          waited += x.start != jobs[i].arrival;  // waited, or never started
        }
        BOOST_TEST_CONTEXT(to_string(shape) << " " << policy.name << (named ? " named" : " any")) {
          BOOST_TEST(waited >= 20u);  // the queues and the ledger's waits are exercised
          // A device set for any worker never goes to a card shared by memory (free_slots).
          if (shape == trace_shape::mix && !named && policy.mode == sharing::by_memory)
            BOOST_TEST(a.result().sets_never_started == a.result().sets);
        }
      }
  }
}

BOOST_AUTO_TEST_SUITE_END()
