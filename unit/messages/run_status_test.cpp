#include <boost/test/unit_test.hpp>

#include "messages/run_status.hpp"

BOOST_AUTO_TEST_SUITE(run_status_test)

BOOST_AUTO_TEST_CASE(every_status_round_trips_through_its_name) {
  using cdui::run_status;
  for (auto s : {run_status::queued, run_status::running, run_status::succeeded, run_status::failed,
                 run_status::cancelled, run_status::interrupted})
    BOOST_TEST((cdui::parse_run_status(cdui::to_string(s)) == s));
  BOOST_TEST(!cdui::parse_run_status("done").has_value());
  BOOST_TEST(!cdui::is_final(run_status::queued));
  BOOST_TEST(!cdui::is_final(run_status::running));
  BOOST_TEST(cdui::is_final(run_status::cancelled));
}

BOOST_AUTO_TEST_CASE(a_failure_is_named_by_its_kind_for_a_metric_label) {
  using cdui::failure_kind;
  BOOST_TEST(failure_kind("Node TrainingLoop (loop) ran out of memory on sim:0.\n\nIt held...")
             == "out_of_memory");
  BOOST_TEST(failure_kind("worker 'w1' was removed by an operator") == "worker");
  BOOST_TEST(failure_kind("the server's actor for worker 'w1' ended unexpectedly (x)") == "worker");
  BOOST_TEST(failure_kind("Node Dataset (data) failed: cannot read no.csv") == "node");
  BOOST_TEST(failure_kind("the run's actor ended unexpectedly") == "other");
  BOOST_TEST(failure_kind("") == "other");
}

BOOST_AUTO_TEST_SUITE_END()
