// The plain structs the actors report: the queue's wait histogram.
#include <boost/test/unit_test.hpp>

#include "messages/actor_status.hpp"

BOOST_AUTO_TEST_SUITE(actor_status_test)

BOOST_AUTO_TEST_CASE(the_wait_histogram_counts_each_wait_in_every_bucket_at_or_above_it) {
  cdui::queue_wait_histogram h;
  h.observe(0.05);  // <= 0.1
  h.observe(7.0);   // <= 10
  h.observe(7200);  // past the last bound: +Inf only
  BOOST_TEST(h.count == 3u);
  BOOST_TEST(h.sum_s == 7207.05, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(h.buckets[0] == 1u);  // 0.1
  BOOST_TEST(h.buckets[3] == 1u);  // 5
  BOOST_TEST(h.buckets[4] == 2u);  // 10
  BOOST_TEST(h.buckets.back() == 2u);  // 3600
  for (std::size_t i = 1; i < h.buckets.size(); ++i)
    BOOST_TEST(h.buckets[i] >= h.buckets[i - 1]);  // cumulative, as Prometheus reads them
}

BOOST_AUTO_TEST_SUITE_END()
