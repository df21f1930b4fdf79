// Where a simulated run's budget comes from (sim/budgets.hpp): policy::resolve_budget's rules.
#include <boost/test/unit_test.hpp>

#include "messages/run_request.hpp"
#include "sim/budgets.hpp"

using namespace cdui::sim;

namespace {
constexpr std::int64_t gib = static_cast<std::int64_t>(cdui::bytes_per_gib);
}

BOOST_AUTO_TEST_SUITE(budgets_test)

BOOST_AUTO_TEST_CASE(typed_is_the_peak_rounded_up_to_a_gib_unless_the_job_says) {
  job j{0, 1, 5 * gib + 1, 10, 0};
  BOOST_TEST(budget_of(j, 0, *policy_named("typed"), 1) == 6 * gib);
  j.typed = 3 * gib;
  BOOST_TEST(budget_of(j, 0, *policy_named("typed"), 1) == 3 * gib);
  BOOST_TEST(budget_of(j, 0, *policy_named("exclusive"), 1) == 0);
}

BOOST_AUTO_TEST_CASE(measured_is_an_earlier_peak_plus_20_percent) {
  job j{0, 1, 10 * gib, 10, 0};
  policy_spec exact{"m", sharing::by_memory, budget_rule::measured, 0};
  BOOST_TEST(budget_of(j, 0, exact, 1) == 12 * gib);
  // Off by at most 5% from this run's peak, then + 20%: never below it.
  for (std::size_t i = 0; i < 200; ++i) {
    auto b = budget_of(j, i, *policy_named("measured"), 9);
    BOOST_TEST(b >= static_cast<std::int64_t>(10 * gib * 1.2 * 0.95) - 1);
    BOOST_TEST(b <= static_cast<std::int64_t>(10 * gib * 1.2 * 1.05) + 1);
  }
}

BOOST_AUTO_TEST_CASE(estimates_err_both_ways_by_the_same_draw_per_job) {
  job j{0, 1, 10 * gib, 10, 0};
  int under = 0;
  for (std::size_t i = 0; i < 200; ++i) {
    auto ten = budget_of(j, i, *policy_named("estimate10"), 5) - 10 * gib;
    auto thirty = budget_of(j, i, *policy_named("estimate30"), 5) - 10 * gib;
    BOOST_TEST(std::abs(ten) <= gib);
    BOOST_TEST(std::abs(thirty) <= 3 * gib);
    // One draw per job, scaled: the ±30% error is three times the ±10% one.
    BOOST_TEST(std::abs(thirty - 3 * ten) <= 3);
    under += ten < 0;
  }
  BOOST_TEST(under > 70);
  BOOST_TEST(under < 130);
  BOOST_TEST(budget_of(j, 7, *policy_named("estimate30"), 5) == budget_of(j, 7, *policy_named("estimate30"), 5));
  BOOST_TEST(budget_of(j, 7, *policy_named("estimate30"), 5) != budget_of(j, 7, *policy_named("estimate30"), 6));
}

BOOST_AUTO_TEST_SUITE_END()
