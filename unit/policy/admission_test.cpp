#include <boost/test/unit_test.hpp>

#include "actors/policy/admission.hpp"

using cdui::policy::admission;
using cdui::policy::wait_cause;
using ids = std::vector<std::string>;

BOOST_AUTO_TEST_SUITE(admission_test)

BOOST_AUTO_TEST_CASE(a_cpu_slot_admits_two_and_the_rest_wait_in_submit_order) {
  admission a;
  a.set_limit("cpu", 2);
  a.enqueue("a", {"cpu"});
  a.enqueue("b", {"cpu"});
  a.enqueue("c", {"cpu"});
  BOOST_TEST((a.admit() == ids{"a", "b"}));
  BOOST_TEST(a.position("c") == 1u);
  BOOST_TEST(a.admit().empty());
  a.release("b");
  BOOST_TEST((a.admit() == ids{"c"}));
  BOOST_TEST(a.position("c") == 0u);
}

BOOST_AUTO_TEST_CASE(five_runs_on_one_card_start_one_at_a_time_in_submit_order) {
  admission a;
  for (auto id : {"r1", "r2", "r3", "r4", "r5"})
    a.enqueue(id, {"sim:0"});
  ids started = a.admit();
  BOOST_TEST((started == ids{"r1"}));
  for (std::size_t p = 1; p <= 4; ++p)
    BOOST_TEST(a.position("r" + std::to_string(p + 1)) == p);
  for (int i = 1; i < 5; ++i) {
    a.release(started.back());
    auto next = a.admit();
    BOOST_REQUIRE(next.size() == 1u);
    started.push_back(next.front());
  }
  BOOST_TEST((started == ids{"r1", "r2", "r3", "r4", "r5"}));
}

BOOST_AUTO_TEST_CASE(devices_never_block_each_other) {
  admission a;
  a.enqueue("a", {"sim:0"});
  a.enqueue("b", {"sim:0"});
  a.enqueue("c", {"sim:1"});
  BOOST_TEST((a.admit() == ids{"a", "c"}));
  BOOST_TEST(a.position("b") == 1u);
}

BOOST_AUTO_TEST_CASE(raising_a_limit_admits_the_next_run_at_once) {
  admission a;
  a.enqueue("a", {"sim:0"});
  a.enqueue("b", {"sim:0"});
  BOOST_TEST((a.admit() == ids{"a"}));
  a.set_limit("sim:0", 2);
  BOOST_TEST((a.admit() == ids{"b"}));
}

BOOST_AUTO_TEST_CASE(a_device_set_run_is_not_starved_by_single_device_runs) {
  admission a;
  a.enqueue("long0", {"sim:0"});
  BOOST_TEST((a.admit() == ids{"long0"}));
  a.enqueue("set", {"sim:1", "sim:0"});
  // sim:1 is free, but the set also needs sim:0: it waits at the front of sim:1 and holds it.
  BOOST_TEST(a.admit().empty());
  for (int i = 0; i < 10; ++i)
    a.enqueue("single" + std::to_string(i), {"sim:1"});
  BOOST_TEST(a.admit().empty());
  BOOST_TEST(a.position("single0") == 2u);
  a.release("long0");
  BOOST_TEST((a.admit() == ids{"set"}));
  a.release("set");
  BOOST_TEST((a.admit() == ids{"single0"}));
}

BOOST_AUTO_TEST_CASE(two_device_sets_in_opposite_orders_cannot_deadlock) {
  admission a;
  a.enqueue("x", {"sim:0", "sim:1"});
  a.enqueue("y", {"sim:1", "sim:0"});
  BOOST_TEST((a.admit() == ids{"x"}));
  a.release("x");
  BOOST_TEST((a.admit() == ids{"y"}));
}

BOOST_AUTO_TEST_CASE(a_removed_run_never_starts_and_frees_its_place) {
  admission a;
  a.enqueue("a", {"sim:0"});
  a.enqueue("b", {"sim:0"});
  a.enqueue("c", {"sim:0"});
  BOOST_TEST((a.admit() == ids{"a"}));
  BOOST_TEST(a.remove("b"));
  BOOST_TEST(!a.remove("a"));  // running: not removable
  BOOST_TEST(!a.remove("zz"));
  BOOST_TEST(a.position("c") == 1u);
  a.release("a");
  BOOST_TEST((a.admit() == ids{"c"}));
}

BOOST_AUTO_TEST_CASE(a_duplicate_id_or_an_empty_set_is_refused) {
  admission a;
  BOOST_TEST(a.enqueue("a", {"cpu"}));
  BOOST_TEST(!a.enqueue("a", {"cpu"}));
  BOOST_TEST(!a.enqueue("b", {}));
}

BOOST_AUTO_TEST_CASE(the_slot_view_shows_limits_running_and_waiting_runs) {
  admission a;
  a.set_limit("cpu", 2);
  a.enqueue("a", {"sim:0"});
  a.enqueue("b", {"sim:0"});
  (void)a.admit();
  auto slots = a.slots();
  BOOST_REQUIRE(slots.size() == 2u);
  BOOST_TEST(slots[0].key == "cpu");
  BOOST_TEST(slots[0].limit == 2);
  BOOST_TEST(slots[1].key == "sim:0");
  BOOST_TEST((slots[1].running == ids{"a"}));
  BOOST_TEST((slots[1].waiting == ids{"b"}));
}

BOOST_AUTO_TEST_CASE(a_closed_device_admits_nothing_until_it_opens_and_keeps_its_order) {
  admission a;
  a.set_open("w1/sim:0", false);  // a worker that is away
  a.enqueue("a", {"w1/sim:0"});
  a.enqueue("b", {"w1/sim:0"});
  a.enqueue("c", {"cpu"});
  BOOST_TEST((a.admit() == ids{"c"}));  // other devices are not held up
  BOOST_TEST(a.position("a") == 1u);
  BOOST_TEST(!a.slots().back().open);  // by key: cpu, then w1/sim:0
  a.set_open("w1/sim:0", true);
  BOOST_TEST((a.admit() == ids{"a"}));
  a.set_open("w1/sim:0", false);  // gone again while a runs: b waits
  a.release("a");
  BOOST_TEST(a.admit().empty());
  a.set_open("w1/sim:0", true);
  BOOST_TEST((a.admit() == ids{"b"}));
}

BOOST_AUTO_TEST_CASE(a_card_offered_twice_runs_one_at_a_time_through_either_offerer) {
  admission a;
  // The server's sim:0 and worker w1's sim:0 are one card.
  a.set_groups("sim:0", {"card:A"});
  a.set_groups("w1/sim:0", {"card:A"});
  a.set_group_limit("card:A", 1);
  a.enqueue("local", {"sim:0"});
  a.enqueue("remote", {"w1/sim:0"});
  BOOST_TEST((a.admit() == ids{"local"}));
  // It waits for the card's shared budget, and says whose run holds it.
  auto why = a.why_waiting("remote");
  BOOST_TEST((why.what == wait_cause::kind::group_full));
  BOOST_TEST(why.key == "w1/sim:0");
  BOOST_TEST(why.group == "card:A");
  BOOST_TEST((why.holders == ids{"local"}));
  BOOST_TEST(why.limit == 1);
  BOOST_TEST(!a.idle("w1/sim:0"));  // its own queue is empty, but the card is taken
  BOOST_TEST(a.group_running("card:A") == 1u);
  a.release("local");
  BOOST_TEST(!a.idle("sim:0"));  // free, but "remote" waits for the same card: it goes first
  BOOST_TEST((a.admit() == ids{"remote"}));
  // A limit of 2 on the card lets both offerers run one each, never three.
  a.set_limit("sim:0", 2);
  a.set_limit("w1/sim:0", 2);
  a.set_group_limit("card:A", 2);
  a.enqueue("l2", {"sim:0"});
  a.enqueue("l3", {"sim:0"});
  BOOST_TEST((a.admit() == ids{"l2"}));
  BOOST_TEST(a.group_running("card:A") == 2u);
  // Out of the group, the key has its own limit only.
  a.set_groups("sim:0", {});
  BOOST_TEST((a.admit() == ids{"l3"}));
}

BOOST_AUTO_TEST_CASE(a_one_shot_workers_devices_admit_a_single_run_between_them) {
  admission a;
  for (auto key : {"once/sim:0", "once/sim:1"})
    a.set_groups(key, {"one-shot:once"});
  a.set_group_limit("one-shot:once", 1);
  a.enqueue("first", {"once/sim:0"});
  a.enqueue("second", {"once/sim:1"});
  BOOST_TEST((a.admit() == ids{"first"}));  // in one admit() call: never both
  BOOST_TEST(a.admit().empty());
  auto view = a.slots();
  BOOST_TEST((view[1].groups == ids{"one-shot:once"}));
}

BOOST_AUTO_TEST_CASE(runs_waiting_for_one_card_through_two_offerers_start_in_submit_order) {
  admission a;
  a.set_groups("sim:0", {"card:A"});
  a.set_groups("w1/sim:0", {"card:A"});
  a.set_group_limit("card:A", 1);
  a.enqueue("holder", {"sim:0"});
  BOOST_TEST((a.admit() == ids{"holder"}));
  // "sim:0" sorts before "w1/sim:0", but the run through the worker waited longer.
  a.enqueue("older", {"w1/sim:0"});
  a.enqueue("newer", {"sim:0"});
  a.enqueue("newest", {"w1/sim:0"});
  BOOST_TEST(a.admit().empty());
  ids order;
  for (auto running = std::string{"holder"}; !running.empty();) {
    a.release(running);
    auto next = a.admit();
    BOOST_REQUIRE(next.size() <= 1u);
    running = next.empty() ? "" : next.front();
    if (!running.empty())
      order.push_back(running);
  }
  BOOST_TEST((order == ids{"older", "newer", "newest"}));
}

BOOST_AUTO_TEST_SUITE_END()
