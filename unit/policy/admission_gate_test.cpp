// The admission policy's memory gate: runs on a card shared by memory start only once its ledger
// grants their budget, in submit order (actors/policy/admission.hpp, set_gated).
#include <boost/test/unit_test.hpp>

#include "actors/policy/admission.hpp"

using cdui::policy::admission;
using ids = std::vector<std::string>;

namespace {

/// A card shared by memory: many runs by count, the ledger decides.
admission shared_card() {
  admission a;
  a.set_limit("w1/sim:0", 64);
  a.set_gated("w1/sim:0", true);
  return a;
}

} // namespace

BOOST_AUTO_TEST_SUITE(admission_gate_test)

BOOST_AUTO_TEST_CASE(a_run_at_the_front_of_a_gated_card_is_handed_out_once_and_starts_when_granted) {
  auto a = shared_card();
  a.enqueue("r1", {"w1/sim:0"});
  a.enqueue("r2", {"w1/sim:0"});
  BOOST_TEST(a.admit().empty());
  BOOST_TEST((a.take_asks() == ids{"r1"}));  // one at a time: r2 waits behind it
  BOOST_TEST(a.admit().empty());
  BOOST_TEST(a.take_asks().empty());  // asked already
  BOOST_TEST(a.position("r2") == 2u);

  BOOST_TEST(a.grant("r1"));
  BOOST_TEST((a.admit() == ids{"r1"}));
  BOOST_TEST((a.take_asks() == ids{"r2"}));  // next in line
  BOOST_TEST(!a.grant("r1"));  // running: nothing to grant
}

BOOST_AUTO_TEST_CASE(a_run_told_to_wait_keeps_its_place_until_memory_frees) {
  auto a = shared_card();
  a.enqueue("big", {"w1/sim:0"});
  a.enqueue("small", {"w1/sim:0"});
  (void)a.admit();
  BOOST_TEST((a.take_asks() == ids{"big"}));
  BOOST_TEST(a.wait("big"));
  (void)a.admit();
  BOOST_TEST(a.take_asks().empty());  // nobody passes it
  BOOST_TEST(a.position("small") == 2u);

  a.ask_again("w1/sim:0");
  (void)a.admit();
  BOOST_TEST((a.take_asks() == ids{"big"}));
  // Granted while told to wait (the answer to an earlier ask crossed the wait): it starts.
  BOOST_TEST(a.wait("big"));
  BOOST_TEST(a.grant("big"));
  BOOST_TEST((a.admit() == ids{"big"}));
}

BOOST_AUTO_TEST_CASE(a_refused_run_is_removed_and_the_next_one_is_asked) {
  auto a = shared_card();
  a.enqueue("r1", {"w1/sim:0"});
  a.enqueue("r2", {"w1/sim:0"});
  (void)a.admit();
  BOOST_TEST((a.take_asks() == ids{"r1"}));
  BOOST_TEST(a.remove("r1"));
  (void)a.admit();
  BOOST_TEST((a.take_asks() == ids{"r2"}));
}

BOOST_AUTO_TEST_CASE(a_card_that_turns_exclusive_admits_by_count_again) {
  auto a = shared_card();
  a.enqueue("r1", {"w1/sim:0"});
  (void)a.admit();
  BOOST_TEST((a.take_asks() == ids{"r1"}));
  a.set_limit("w1/sim:0", 1);
  a.set_gated("w1/sim:0", false);
  BOOST_TEST(!a.gated("w1/sim:0"));
  BOOST_TEST((a.admit() == ids{"r1"}));
  BOOST_TEST(a.take_asks().empty());
}

BOOST_AUTO_TEST_CASE(a_device_set_with_one_gated_card_is_asked_and_keys_without_a_gate_are_untouched) {
  auto a = shared_card();
  a.set_limit("w1/sim:1", 1);
  a.enqueue("set", {"w1/sim:0", "w1/sim:1"});
  a.enqueue("plain", {"cpu"});
  BOOST_TEST((a.admit() == ids{"plain"}));
  BOOST_TEST((a.take_asks() == ids{"set"}));
  BOOST_TEST(a.grant("set"));
  BOOST_TEST((a.admit() == ids{"set"}));
  auto views = a.slots();
  auto gated = std::count_if(views.begin(), views.end(), [](const auto& v) { return v.gated; });
  BOOST_TEST(gated == 1);
}

BOOST_AUTO_TEST_SUITE_END()
