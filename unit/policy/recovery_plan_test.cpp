#include <boost/test/unit_test.hpp>

#include "actors/policy/recovery_plan.hpp"
#include "actors/policy/run_options.hpp"

using namespace cdui;
using namespace cdui::policy;
using action = recovery_step::action;

namespace {

run_info unfinished(const std::string& id, run_status status, const std::string& queue_key,
                    const std::string& options = "{}") {
  run_info info;
  info.id = id;
  info.name = "name-" + id;
  info.status = status;
  info.queue_key = queue_key;
  info.options = options;
  return info;
}

} // namespace

BOOST_AUTO_TEST_SUITE(recovery_plan_test)

BOOST_AUTO_TEST_CASE(queued_runs_are_queued_again_in_order_with_their_options) {
  auto plan = recovery_plan({unfinished("a", run_status::queued, "cpu", R"({"seed": 7})"),
                             unfinished("b", run_status::queued, "sim:0", R"({"device": "sim:0"})")},
                            false);
  BOOST_REQUIRE(plan.size() == 2u);
  BOOST_TEST(plan[0].run_id == "a");
  BOOST_TEST((plan[0].what == action::requeue));
  BOOST_TEST(plan[0].request.has_seed);
  BOOST_TEST(plan[0].request.seed == 7u);
  BOOST_TEST(plan[0].request.name == "name-a");
  BOOST_TEST(plan[1].run_id == "b");
  BOOST_TEST(plan[1].request.device == "sim:0");
}

BOOST_AUTO_TEST_CASE(a_local_run_left_running_ends_interrupted) {
  for (bool workers : {false, true}) {
    auto plan = recovery_plan({unfinished("a", run_status::running, "cpu")}, workers);
    BOOST_REQUIRE(plan.size() == 1u);
    BOOST_TEST((plan[0].what == action::end));
    BOOST_TEST((plan[0].status == run_status::interrupted));
    BOOST_TEST(plan[0].reason == "the server stopped while the run was running");
  }
}

BOOST_AUTO_TEST_CASE(a_worker_run_left_running_is_adopted_only_by_a_server_with_workers) {
  auto options = R"({"target": {"worker": "gpu-box"}})";
  auto plan = recovery_plan({unfinished("a", run_status::running, "gpu-box/cuda:1", options)}, true);
  BOOST_TEST((plan[0].what == action::adopt));
  BOOST_TEST(plan[0].request.worker == "gpu-box");
  BOOST_TEST((plan[0].request.devices == std::vector<std::string>{"cuda:1"}));
  plan = recovery_plan({unfinished("a", run_status::running, "gpu-box/cuda:1", options)}, false);
  BOOST_TEST((plan[0].what == action::end));
  BOOST_TEST((plan[0].status == run_status::interrupted));
}

BOOST_AUTO_TEST_CASE(a_floating_run_a_worker_was_executing_becomes_that_workers_run) {
  auto plan = recovery_plan(
    {unfinished("a", run_status::running, "gpu-box/sim:0", R"({"target": {"worker": "any"}})"),
     unfinished("b", run_status::queued, "any", R"({"target": {"worker": "any"}})")},
    true);
  BOOST_TEST((plan[0].what == action::adopt));
  BOOST_TEST(plan[0].request.worker == "gpu-box");
  BOOST_TEST((plan[0].request.devices == std::vector<std::string>{"sim:0"}));
  // One still waiting floats again.
  BOOST_TEST((plan[1].what == action::requeue));
  BOOST_TEST(plan[1].request.worker == any_worker);
  BOOST_TEST(plan[1].request.devices.empty());
}

BOOST_AUTO_TEST_CASE(a_queued_worker_run_keeps_the_device_it_was_given) {
  auto plan = recovery_plan(
    {unfinished("a", run_status::queued, "gpu-box/sim:1", R"({"target": {"worker": "gpu-box"}})")},
    true);
  BOOST_TEST((plan[0].what == action::requeue));
  BOOST_TEST((plan[0].request.devices == std::vector<std::string>{"sim:1"}));
}

BOOST_AUTO_TEST_CASE(a_run_whose_stored_options_no_longer_read_ends_failed_saying_why) {
  auto plan = recovery_plan({unfinished("a", run_status::queued, "cpu", R"({"seed": "x"})")}, true);
  BOOST_TEST((plan[0].what == action::end));
  BOOST_TEST((plan[0].status == run_status::failed));
  BOOST_TEST(plan[0].reason.rfind("could not be queued again after a restart: ", 0) == 0u);
  BOOST_TEST(plan[0].reason.find("seed") != std::string::npos, plan[0].reason);
}

BOOST_AUTO_TEST_SUITE_END()
