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

BOOST_AUTO_TEST_SUITE_END()
