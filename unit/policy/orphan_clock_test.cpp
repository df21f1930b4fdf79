#include <boost/test/unit_test.hpp>

#include "actors/policy/orphan_clock.hpp"

using cdui::policy::orphan_clock;

BOOST_AUTO_TEST_SUITE(orphan_clock_test)

BOOST_AUTO_TEST_CASE(a_run_without_its_agent_stops_once_none_was_there_for_the_whole_grace) {
  orphan_clock clock{1000};
  BOOST_TEST(!clock.gone_for_grace(true, 0));
  BOOST_TEST(!clock.gone_for_grace(false, 100));  // gone from here
  BOOST_TEST(!clock.gone_for_grace(false, 1099));
  BOOST_TEST(clock.gone_for_grace(false, 1100));
}

BOOST_AUTO_TEST_CASE(an_agent_that_comes_back_within_the_grace_starts_it_afresh) {
  orphan_clock clock{1000};
  BOOST_TEST(!clock.gone_for_grace(false, 0));
  BOOST_TEST(!clock.gone_for_grace(true, 900));  // a new agent found the run
  BOOST_TEST(!clock.gone_for_grace(false, 1500));
  BOOST_TEST(!clock.gone_for_grace(false, 2499));
  BOOST_TEST(clock.gone_for_grace(false, 2500));
}

BOOST_AUTO_TEST_CASE(a_grace_of_zero_stops_at_the_first_look_without_an_agent) {
  orphan_clock clock{0};
  BOOST_TEST(!clock.gone_for_grace(true, 5));
  BOOST_TEST(clock.gone_for_grace(false, 5));
}

BOOST_AUTO_TEST_SUITE_END()
