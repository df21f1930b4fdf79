#include <boost/test/unit_test.hpp>

#include "actors/slot_queue.hpp"

using cdui::actors::slot_queue;

BOOST_AUTO_TEST_SUITE(slot_queue_test)

BOOST_AUTO_TEST_CASE(cpu_slot_admits_two_and_the_rest_wait_in_submit_order) {
  slot_queue q{"cpu", 2};
  q.enqueue("a");
  q.enqueue("b");
  q.enqueue("c");
  auto first = q.admit();
  BOOST_TEST((first == std::vector<std::string>{"a", "b"}));
  BOOST_TEST(q.running() == 2u);
  BOOST_TEST(q.waiting() == 1u);
  BOOST_TEST(q.position("c") == 1u);
  BOOST_TEST(q.admit().empty());
  q.release("b");
  BOOST_TEST((q.admit() == std::vector<std::string>{"c"}));
  BOOST_TEST(q.position("c") == 0u);
}

BOOST_AUTO_TEST_CASE(accelerator_slot_admits_one) {
  slot_queue q{"cuda:0", 1};
  q.enqueue("a");
  q.enqueue("b");
  BOOST_TEST((q.admit() == std::vector<std::string>{"a"}));
  BOOST_TEST(q.position("b") == 1u);
  q.release("a");
  BOOST_TEST((q.admit() == std::vector<std::string>{"b"}));
}

BOOST_AUTO_TEST_CASE(a_waiting_run_can_leave_and_the_order_of_the_others_holds) {
  slot_queue q{"cpu", 1};
  for (auto id : {"a", "b", "c", "d"})
    q.enqueue(id);
  BOOST_TEST(q.admit().size() == 1u);
  BOOST_TEST(q.remove("c"));
  BOOST_TEST(!q.remove("c"));
  BOOST_TEST(!q.remove("a"));  // running, not waiting
  BOOST_TEST(q.position("d") == 2u);
  q.release("a");
  BOOST_TEST((q.admit() == std::vector<std::string>{"b"}));
  q.release("b");
  BOOST_TEST((q.admit() == std::vector<std::string>{"d"}));
}

BOOST_AUTO_TEST_CASE(a_limit_below_one_is_one) {
  slot_queue q{"cpu", 0};
  q.enqueue("a");
  q.enqueue("b");
  BOOST_TEST(q.admit().size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
