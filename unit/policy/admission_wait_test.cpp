// Why a waiting run does not start (actors/policy/admission.hpp, why_waiting): one case per cause.
#include <boost/test/unit_test.hpp>

#include "actors/policy/admission.hpp"

using cdui::policy::admission;
using cdui::policy::wait_cause;
using kind = wait_cause::kind;
using ids = std::vector<std::string>;

BOOST_AUTO_TEST_SUITE(admission_wait_test)

BOOST_AUTO_TEST_CASE(a_running_or_unknown_run_and_one_about_to_start_have_no_cause) {
  admission a;
  a.enqueue("a", {"sim:0"});
  BOOST_TEST((a.why_waiting("a").what == kind::none));  // next admit() starts it
  BOOST_TEST((a.admit() == ids{"a"}));
  BOOST_TEST((a.why_waiting("a").what == kind::none));
  BOOST_TEST((a.why_waiting("nobody").what == kind::none));
}

BOOST_AUTO_TEST_CASE(a_run_on_a_closed_key_waits_for_it_whatever_its_place) {
  admission a;
  a.enqueue("a", {"w1/sim:0"});
  a.enqueue("b", {"w1/sim:0"});
  BOOST_TEST((a.admit() == ids{"a"}));
  a.set_open("w1/sim:0", false);  // drained while a runs: b is held by the closed key, not by a
  auto why = a.why_waiting("b");
  BOOST_TEST((why.what == kind::closed));
  BOOST_TEST(why.key == "w1/sim:0");
  BOOST_TEST(why.position == 1u);
}

BOOST_AUTO_TEST_CASE(the_next_run_on_a_full_key_names_the_runs_that_hold_it) {
  admission a;
  a.set_limit("cpu", 2);
  for (auto id : {"a", "b", "c"})
    a.enqueue(id, {"cpu"});
  BOOST_TEST((a.admit() == ids{"a", "b"}));
  auto why = a.why_waiting("c");
  BOOST_TEST((why.what == kind::full));
  BOOST_TEST(why.key == "cpu");
  BOOST_TEST(why.position == 1u);
  BOOST_TEST((why.holders == ids{"a", "b"}));
  BOOST_TEST(why.limit == 2);
}

BOOST_AUTO_TEST_CASE(a_run_further_back_waits_behind_the_front_of_its_queue) {
  admission a;
  for (auto id : {"a", "b", "c", "d"})
    a.enqueue(id, {"sim:0"});
  BOOST_TEST((a.admit() == ids{"a"}));
  auto why = a.why_waiting("d");
  BOOST_TEST((why.what == kind::behind));
  BOOST_TEST(why.key == "sim:0");
  BOOST_TEST(why.position == 3u);
  BOOST_TEST(why.front == "b");
}

BOOST_AUTO_TEST_CASE(a_device_set_at_the_front_reserves_a_free_key_and_says_which_key_it_waits_for) {
  admission a;
  a.enqueue("long0", {"sim:0"});
  BOOST_TEST((a.admit() == ids{"long0"}));
  a.enqueue("set", {"sim:1", "sim:0"});
  a.enqueue("single", {"sim:1"});
  BOOST_TEST(a.admit().empty());
  // The set: first in line on sim:1, which it reserves, waiting for sim:0, which long0 holds.
  auto set = a.why_waiting("set");
  BOOST_TEST((set.what == kind::full));
  BOOST_TEST(set.key == "sim:0");
  BOOST_TEST((set.holders == ids{"long0"}));
  BOOST_TEST((set.reserving == ids{"sim:1"}));
  // The single run behind it: sim:1 is free, but the set reserves it until sim:0 is free too.
  auto single = a.why_waiting("single");
  BOOST_TEST((single.what == kind::reserved));
  BOOST_TEST(single.key == "sim:1");
  BOOST_TEST(single.position == 2u);
  BOOST_TEST(single.front == "set");
  BOOST_TEST(single.waits_for == "sim:0");
}

BOOST_AUTO_TEST_CASE(a_run_behind_a_device_set_that_waits_for_the_same_key_is_only_behind) {
  admission a;
  a.enqueue("long1", {"sim:1"});
  BOOST_TEST((a.admit() == ids{"long1"}));
  a.enqueue("set", {"sim:1", "sim:0"});
  a.enqueue("single", {"sim:1"});
  BOOST_TEST(a.admit().empty());
  // sim:1 is taken: the set reserves nothing there, it waits like anyone.
  BOOST_TEST((a.why_waiting("single").what == kind::behind));
  BOOST_TEST(a.why_waiting("set").key == "sim:1");
  BOOST_TEST((a.why_waiting("set").reserving == ids{"sim:0"}));
}

BOOST_AUTO_TEST_CASE(a_device_set_across_workers_holds_no_card_while_one_of_its_workers_is_away) {
  admission a;
  a.enqueue("long", {"w1/sim:1"});
  BOOST_TEST((a.admit() == ids{"long"}));
  a.enqueue("set", {"w1/sim:0", "w1/sim:1", "w2/sim:0"});
  a.enqueue("single", {"w1/sim:0"});
  BOOST_TEST(a.admit().empty());  // the set reserves w1/sim:0 while long holds w1/sim:1
  BOOST_TEST((a.why_waiting("single").what == kind::reserved));
  // w2 goes away: the set waits for it and holds nothing of w1's meanwhile.
  a.set_open("w2/sim:0", false);
  BOOST_TEST((a.admit() == ids{"single"}));
  auto set = a.why_waiting("set");
  BOOST_TEST((set.what == kind::closed));
  BOOST_TEST(set.key == "w2/sim:0");
  BOOST_TEST(set.reserving.empty());
  BOOST_TEST(a.position("set") == 1u);  // it keeps its place
  // w2 is back: the set is at the fronts again, and the runs after it wait behind it.
  a.set_open("w2/sim:0", true);
  a.enqueue("later", {"w1/sim:0"});
  a.release("single");
  a.release("long");
  BOOST_TEST((a.admit() == ids{"set"}));
  BOOST_TEST((a.why_waiting("later").what == kind::full));
}

BOOST_AUTO_TEST_CASE(a_device_set_queued_while_its_worker_is_away_takes_its_place_when_the_worker_returns) {
  admission a;
  a.set_open("w2/sim:0", false);
  a.enqueue("set", {"w1/sim:0", "w2/sim:0"});
  a.enqueue("first", {"w1/sim:0"});
  BOOST_TEST((a.admit() == ids{"first"}));  // the set holds nothing while w2 is away
  a.enqueue("second", {"w1/sim:0"});
  a.set_open("w2/sim:0", true);
  a.release("first");
  BOOST_TEST((a.admit() == ids{"set"}));  // queued before second, it goes first
  BOOST_TEST((a.why_waiting("second").what == kind::full));
}

// A run next on a card another offerer holds: admission_test.cpp,
// a_card_offered_twice_runs_one_at_a_time_through_either_offerer.

BOOST_AUTO_TEST_CASE(a_run_next_on_a_card_shared_by_memory_waits_for_the_ledger_until_granted) {
  admission a;
  a.set_limit("w1/sim:0", 64);
  a.set_gated("w1/sim:0", true);
  a.enqueue("r1", {"w1/sim:0"});
  BOOST_TEST(a.admit().empty());
  BOOST_TEST((a.take_asks() == ids{"r1"}));
  BOOST_TEST((a.why_waiting("r1").what == kind::memory));
  BOOST_TEST(a.wait("r1"));
  BOOST_TEST((a.why_waiting("r1").what == kind::memory));
  BOOST_TEST(a.why_waiting("r1").key == "w1/sim:0");
  BOOST_TEST(a.grant("r1"));
  BOOST_TEST((a.why_waiting("r1").what == kind::none));  // it starts at the next admit()
}

BOOST_AUTO_TEST_SUITE_END()
