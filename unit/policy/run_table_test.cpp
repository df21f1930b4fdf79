#include <boost/test/unit_test.hpp>

#include "actors/policy/run_table.hpp"

using cdui::run_id;
using cdui::run_lane;
using cdui::policy::floating_ask;
using cdui::policy::floating_run;
using cdui::policy::queued_budget;
using table = cdui::policy::run_table<std::string>;

namespace {

std::vector<std::string> floating_ids(const table& t) {
  std::vector<std::string> out;
  for (const auto& id : t.floating())
    out.push_back(id.str());
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(run_table_test)

BOOST_AUTO_TEST_CASE(one_erase_removes_the_record_its_actor_key_and_its_floating_place) {
  table t;
  auto& a = t.add(run_id{"a"}, "actor-a", 11);
  a.budget = queued_budget{};
  a.memory_wait = "waits for memory";
  t.float_run(a, floating_run{"sim"});
  t.add(run_id{"b"}, "actor-b", 12);
  BOOST_TEST(t.by_actor(11)->id.str() == "a");
  BOOST_TEST(t.floating_position(run_id{"a"}) == 1u);

  BOOST_TEST(t.erase(run_id{"a"}));
  BOOST_TEST(!t.contains(run_id{"a"}));
  BOOST_TEST(t.by_actor(11) == nullptr);  // its actor's down message finds no run
  BOOST_TEST(t.floating().empty());
  BOOST_TEST(t.size() == 1u);
  BOOST_TEST(t.by_actor(12)->actor == "actor-b");
  BOOST_TEST(!t.erase(run_id{"a"}));  // a second erase changes nothing

  // The id is free again: a run of that id (a restart's) gets a fresh record.
  auto& again = t.add(run_id{"a"}, "actor-a2", 13);
  BOOST_TEST(!again.budget);
  BOOST_TEST(!again.memory_wait);
  BOOST_TEST(!again.floating);
}

BOOST_AUTO_TEST_CASE(a_run_id_is_added_once) {
  table t;
  t.add(run_id{"a"}, "x", 1);
  BOOST_CHECK_THROW(t.add(run_id{"a"}, "y", 2), std::logic_error);
  BOOST_TEST(t.by_actor(1)->actor == "x");
  BOOST_CHECK_THROW((void)t.at(run_id{"zzz"}), std::out_of_range);
}

BOOST_AUTO_TEST_CASE(floating_runs_keep_submit_order_and_leave_it_when_placed) {
  table t;
  for (auto [id, key] : {std::pair{"r3", 3}, {"r1", 1}, {"r2", 2}})
    t.float_run(t.add(run_id{id}, id, key), floating_run{"cuda"});
  BOOST_TEST((floating_ids(t) == std::vector<std::string>{"r3", "r1", "r2"}));  // not by id
  BOOST_TEST(t.floating_position(run_id{"r2"}) == 3u);

  auto& r1 = t.at(run_id{"r1"});
  r1.ask = floating_ask{true, {"gpu-box/cuda:0"}};
  BOOST_TEST(t.unfloat(run_id{"r1"}));
  BOOST_TEST(!r1.floating);
  BOOST_TEST(!r1.ask);  // the ledger's ask was about floating: it goes with it
  BOOST_TEST((floating_ids(t) == std::vector<std::string>{"r3", "r2"}));
  BOOST_TEST(t.floating_position(run_id{"r1"}) == 0u);
  BOOST_TEST(!t.unfloat(run_id{"r1"}));  // placed already
  BOOST_TEST(t.contains(run_id{"r1"}));  // placed, not ended
}

BOOST_AUTO_TEST_CASE(a_queued_run_reports_its_wait_at_its_first_start_only) {
  table t;
  auto& queued = t.add(run_id{"q"}, "q", 1);
  queued.queued_ms = 1'000;
  BOOST_TEST(t.start(queued, 4'500).value() == 3'500);
  BOOST_TEST(queued.started);
  BOOST_TEST(*queued.started_ms == 4'500);
  BOOST_TEST(!t.start(queued, 9'000));  // counted once

  auto& interactive = t.add(run_id{"i"}, "i", 2);
  interactive.lane = run_lane::interactive;
  BOOST_TEST(!t.start(interactive, 5'000));  // never queued: no wait to count

  auto& early = t.add(run_id{"e"}, "e", 3);
  early.queued_ms = 8'000;
  BOOST_TEST(t.start(early, 7'000).value() == 0);  // a clock step back is no negative wait
}

BOOST_AUTO_TEST_CASE(a_shutdown_waits_only_for_runs_started_here) {
  table t;
  auto& queued = t.add(run_id{"q"}, "q", 1);
  auto& remote = t.add(run_id{"w"}, "w", 2);
  remote.remote = true;
  t.start(remote, 0);
  BOOST_TEST(!t.runs_here());  // one waits, one runs on a worker
  t.start(queued, 0);
  BOOST_TEST(t.runs_here());
  t.erase(run_id{"q"});
  BOOST_TEST(!t.runs_here());
}

BOOST_AUTO_TEST_CASE(a_card_turned_exclusive_clears_the_memory_waits_gated_there_only) {
  table t;
  auto& here = t.add(run_id{"a"}, "a", 1);
  here.gate = "sim:0";
  here.memory_wait = "waits for memory on sim:0";
  auto& there = t.add(run_id{"b"}, "b", 2);
  there.gate = "box/sim:0";
  there.memory_wait = "waits for memory on sim:0 on box";
  t.ungate("sim:0");
  BOOST_TEST(!here.memory_wait);
  BOOST_TEST(*there.memory_wait == "waits for memory on sim:0 on box");
}

BOOST_AUTO_TEST_CASE(freed_memory_asks_again_the_floating_runs_told_to_wait_not_those_asked) {
  table t;
  auto& told = t.add(run_id{"told"}, "t", 1);
  t.float_run(told, floating_run{"sim"});
  told.ask = floating_ask{true, {"sim:0"}};
  auto& asked = t.add(run_id{"asked"}, "a", 2);
  t.float_run(asked, floating_run{"sim"});
  asked.ask = floating_ask{false, {"sim:0"}};
  t.ask_again();
  BOOST_TEST(!told.ask);
  BOOST_TEST(asked.ask.has_value());  // its answer is on its way
}

BOOST_AUTO_TEST_SUITE_END()
