// The trace generators (sim/trace_shapes.hpp): the same trace from the same seed, the shapes
// they promise, and the load they ask for.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "messages/run_request.hpp"
#include "sim/trace_shapes.hpp"

using namespace cdui::sim;

namespace {
cluster_spec cluster() { return std::get<cluster_spec>(cluster_spec::parse("10x8x80")); }
}

BOOST_AUTO_TEST_SUITE(trace_shapes_test)

BOOST_AUTO_TEST_CASE(the_same_request_draws_the_same_trace) {
  auto a = generate({trace_shape::mix, 500, 1.0, 42}, cluster());
  auto b = generate({trace_shape::mix, 500, 1.0, 42}, cluster());
  auto c = generate({trace_shape::mix, 500, 1.0, 43}, cluster());
  BOOST_REQUIRE_EQUAL(a.size(), 500u);
  bool same = true;
  bool other = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    same &= a[i].arrival == b[i].arrival && a[i].peak == b[i].peak && a[i].cards == b[i].cards
            && a[i].duration == b[i].duration;
    other |= a[i].peak != c[i].peak;
  }
  BOOST_TEST(same);
  BOOST_TEST(other);
}

BOOST_AUTO_TEST_CASE(every_budget_of_the_compared_policies_fits_a_card) {
  const double card = 80 * cdui::bytes_per_gib;
  for (auto shape : {trace_shape::small, trace_shape::mix, trace_shape::bursts, trace_shape::whole}) {
    auto jobs = generate({shape, 2000, 1.0, 1}, cluster());
    BOOST_TEST(std::is_sorted(jobs.begin(), jobs.end(), [](auto& x, auto& y) { return x.arrival < y.arrival; }));
    for (const auto& j : jobs) {
      BOOST_TEST(j.peak * 1.3 + 768.0 * 1024 * 1024 <= card);
      BOOST_TEST(j.duration >= 60);
      BOOST_TEST((j.cards == 1 || j.cards == 2 || j.cards == 4 || j.cards == 8));
      if (shape == trace_shape::whole)
        BOOST_TEST(j.peak > card / 2);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_load_is_the_cards_time_asked_over_the_cards_time_offered) {
  for (double load : {0.5, 2.0}) {
    auto jobs = generate({trace_shape::mix, 5000, load, 3}, cluster());
    double card_seconds = 0;
    for (const auto& j : jobs)
      card_seconds += static_cast<double>(j.cards * j.duration);
    double span = static_cast<double>(jobs.back().arrival - jobs.front().arrival);
    BOOST_TEST(card_seconds / (span * 80) == load, boost::test_tools::tolerance(0.1));
  }
  auto mix = generate({trace_shape::mix, 5000, 1.0, 3}, cluster());
  auto sets = std::count_if(mix.begin(), mix.end(), [](const job& j) { return j.cards > 1; });
  BOOST_TEST(sets > 600);
  BOOST_TEST(sets < 900);
}

BOOST_AUTO_TEST_CASE(bursts_submit_a_sweeps_runs_at_once) {
  auto jobs = generate({trace_shape::bursts, 3000, 1.0, 5}, cluster());
  std::size_t alone = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i)
    alone += (i == 0 || jobs[i - 1].arrival != jobs[i].arrival)
             && (i + 1 == jobs.size() || jobs[i + 1].arrival != jobs[i].arrival);
  BOOST_TEST(alone < 100u);
}

BOOST_AUTO_TEST_SUITE_END()
