// The test harness's child processes (testkit/process.hpp).
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <string>

#include "testkit/process.hpp"

using cdui::test::process;

BOOST_AUTO_TEST_SUITE(process_test)

BOOST_AUTO_TEST_CASE(an_exited_process_is_reaped_though_a_process_it_left_holds_its_output) {
  // The shell leaves a sleep behind with its stdout and stderr (as an agent leaves a run stopped
  // before its exec), prints the sleep's pid and exits.
  process p{{"/bin/sh", "-c", "sleep 600 & echo $!; echo done >&2"}, {}};
  auto code = p.wait_for(std::chrono::seconds(60));
  BOOST_REQUIRE(code.has_value());
  BOOST_TEST(*code == 0);
  BOOST_TEST(p.err() == "done\n");
  auto left = static_cast<pid_t>(std::stoi(p.out()));
  // What it wrote before it exited was read, and the wait ended while the sleep still runs.
  BOOST_TEST(::kill(left, 0) == 0, "the process it left had ended: the wait waited for it");
  ::kill(left, SIGKILL);
}

BOOST_AUTO_TEST_SUITE_END()
