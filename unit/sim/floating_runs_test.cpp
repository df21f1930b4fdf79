// The simulator's index of floating runs (sim/floating_runs.hpp): the oldest that fits.
#include <boost/test/unit_test.hpp>

#include "sim/floating_runs.hpp"

using cdui::sim::floating_runs;

BOOST_AUTO_TEST_SUITE(floating_runs_test)

BOOST_AUTO_TEST_CASE(the_oldest_single_run_that_needs_at_most_the_room) {
  floating_runs runs{10};
  runs.add_single(2, 6);
  runs.add_single(5, 4);
  runs.add_single(7, 0);
  runs.add_oversized(3);
  runs.add_set(4, 0b11);
  BOOST_TEST(runs.size() == 5u);
  BOOST_TEST(*runs.oldest_single(10) == 2u);
  BOOST_TEST(*runs.oldest_single(5) == 5u);
  BOOST_TEST(*runs.oldest_single(0) == 7u);
  BOOST_TEST(!runs.oldest_single(-1).has_value());
  BOOST_TEST(*runs.oldest_single(INT64_MAX) == 2u);
  runs.remove(2);
  runs.remove(3);
  runs.remove(4);
  BOOST_TEST(*runs.oldest_single(INT64_MAX) == 5u);
  BOOST_TEST(!runs.oldest_oversized().has_value());
  BOOST_TEST(runs.sets().at(0b11).empty());
  BOOST_TEST(runs.size() == 2u);
  runs.remove(5);
  runs.remove(7);
  BOOST_TEST(!runs.oldest_single(INT64_MAX).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
