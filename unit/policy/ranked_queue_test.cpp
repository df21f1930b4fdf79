#include <boost/test/unit_test.hpp>

#include <stdexcept>

#include "actors/policy/admission.hpp"
#include "actors/policy/ranked_queue.hpp"

using cdui::policy::admission;
using cdui::policy::ranked_queue;
using ids = std::vector<std::string>;

BOOST_AUTO_TEST_SUITE(ranked_queue_test)

BOOST_AUTO_TEST_CASE(places_follow_the_submit_order_as_runs_leave_from_the_front_and_the_middle) {
  ranked_queue q;
  BOOST_TEST(q.empty());
  BOOST_TEST(q.place(1) == 0u);
  q.push_back(3, "a");
  q.push_back(7, "b");
  q.push_back(8, "c");
  q.push_back(20, "d");
  BOOST_TEST(q.size() == 4u);
  BOOST_TEST(q.front() == "a");
  BOOST_TEST(q.place(20) == 4u);
  BOOST_TEST(q.erase(7));  // a cancel in the middle
  BOOST_TEST(!q.erase(7));
  BOOST_TEST(q.place(7) == 0u);
  BOOST_TEST(q.place(8) == 2u);
  BOOST_TEST(q.place(20) == 3u);
  q.pop_front();
  BOOST_TEST(q.front() == "c");
  BOOST_TEST(q.place(20) == 2u);
  BOOST_TEST((q.ids() == ids{"c", "d"}));
}

BOOST_AUTO_TEST_CASE(a_run_pushed_back_must_be_the_newest) {
  ranked_queue q;
  q.push_back(5, "a");
  BOOST_CHECK_THROW(q.push_back(5, "b"), std::logic_error);
  BOOST_CHECK_THROW(q.push_back(4, "b"), std::logic_error);
  BOOST_TEST((q.ids() == ids{"a"}));
}

BOOST_AUTO_TEST_CASE(cancelling_most_of_a_long_queue_keeps_every_place_right) {
  // 10,000 runs on one card behind one running: every other one is cancelled, from the back
  // half first, then the places of those left are 1, 2, 3, ... in submit order.
  admission a;
  a.enqueue("holder", {"sim:0"});
  BOOST_TEST((a.admit() == ids{"holder"}));
  constexpr int n = 10'000;
  for (int i = 0; i < n; ++i)
    a.enqueue("r" + std::to_string(i), {"sim:0"});
  for (int i = n - 1; i >= 0; i -= 2)
    BOOST_TEST_REQUIRE(a.remove("r" + std::to_string(i)));
  BOOST_TEST(a.position("r9999") == 0u);
  for (int i = 0; i < n; i += 2)
    BOOST_TEST_REQUIRE(a.position("r" + std::to_string(i)) == static_cast<std::size_t>(i / 2 + 1));
  a.release("holder");
  BOOST_TEST((a.admit() == ids{"r0"}));
  BOOST_TEST(a.position("r2") == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
