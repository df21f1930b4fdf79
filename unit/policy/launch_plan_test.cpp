#include <boost/test/unit_test.hpp>

#include "actors/policy/launch_plan.hpp"

using cdui::device_offer;
using cdui::policy::launch_plan;
using cdui::policy::plan_launch;
using names = std::vector<std::string>;
using aliases = std::map<std::string, std::string>;

namespace {

constexpr std::int64_t gib = 1024LL * 1024 * 1024;

/// A worker with the CPU, two CUDA cards and three sim cards of different sizes.
std::vector<device_offer> offers() {
  return {{"cpu", "cpu", "cpu-box", 64 * gib, 32 * gib},
          {"cuda:0", "cuda", "GPU-aaaa", 80 * gib, 80 * gib},
          {"cuda:2", "cuda", "GPU-cccc", 40 * gib, 40 * gib},
          {"sim:0", "sim", "SIM-box-1-0", 1 * gib, 1 * gib},
          {"sim:1", "sim", "SIM-CARD-A-0", 2 * gib, 2 * gib},
          {"sim:2", "sim", "SIM-box-1-2", 4 * gib, 4 * gib}};
}

launch_plan plan_of(const names& devices) {
  auto plan = plan_launch(devices, offers());
  BOOST_REQUIRE(std::holds_alternative<launch_plan>(plan));
  return std::get<launch_plan>(plan);
}

std::string refusal_of(const names& devices) {
  auto plan = plan_launch(devices, offers());
  BOOST_REQUIRE(std::holds_alternative<std::string>(plan));
  return std::get<std::string>(plan);
}

} // namespace

BOOST_AUTO_TEST_SUITE(launch_plan_test)

BOOST_AUTO_TEST_CASE(a_cpu_run_sees_the_cpu_and_no_card) {
  auto plan = plan_of({"cpu"});
  BOOST_TEST(plan.device == "cpu");
  BOOST_TEST((plan.visible_devices == names{"cpu"}));
  BOOST_TEST((plan.device_aliases == aliases{{"cpu", "cpu"}}));
  BOOST_TEST(plan.cuda_visible_devices == "");
  BOOST_TEST(plan.sim_devices == "");
  // Both are set, empty, so the agent's own values never reach the run.
  BOOST_TEST((plan.environment()
              == aliases{{"CODEFYUI_SIM_DEVICES", ""}, {"CUDA_VISIBLE_DEVICES", ""}}));
}

BOOST_AUTO_TEST_CASE(one_cuda_card_is_the_runs_cuda_0_whatever_the_worker_calls_it) {
  auto plan = plan_of({"cuda:2"});
  BOOST_TEST(plan.device == "cuda:0");
  BOOST_TEST((plan.visible_devices == names{"cuda:0"}));
  BOOST_TEST((plan.device_aliases == aliases{{"cuda:0", "cuda:2"}}));
  BOOST_TEST(plan.cuda_visible_devices == "2");
  BOOST_TEST(plan.sim_devices == "");
  BOOST_REQUIRE(plan.cards.size() == 1u);
  BOOST_TEST(plan.cards[0].uuid == "GPU-cccc");
  BOOST_TEST(plan.cards[0].kind == "cuda");
}

BOOST_AUTO_TEST_CASE(two_cuda_cards_are_numbered_in_the_order_the_run_was_given_them) {
  auto plan = plan_of({"cuda:2", "cuda:0"});
  BOOST_TEST(plan.device == "cuda:0");
  BOOST_TEST((plan.visible_devices == names{"cuda:0", "cuda:1"}));
  BOOST_TEST((plan.device_aliases == aliases{{"cuda:0", "cuda:2"}, {"cuda:1", "cuda:0"}}));
  // CUDA_VISIBLE_DEVICES=2,0: the run's cuda:0 is the worker's cuda:2.
  BOOST_TEST(plan.cuda_visible_devices == "2,0");
}

BOOST_AUTO_TEST_CASE(sim_cards_carry_their_sizes_in_order_and_keep_their_uuids) {
  auto plan = plan_of({"sim:2", "sim:1"});
  BOOST_TEST((plan.visible_devices == names{"sim:0", "sim:1"}));
  BOOST_TEST((plan.device_aliases == aliases{{"sim:0", "sim:2"}, {"sim:1", "sim:1"}}));
  // Each with its card's UUID: the run's process charges the agent's card, not a card of its own.
  BOOST_TEST(plan.sim_devices
             == std::to_string(4 * gib) + "=SIM-box-1-2," + std::to_string(2 * gib) + "=SIM-CARD-A-0");
  BOOST_TEST(plan.cuda_visible_devices == "");
  BOOST_REQUIRE(plan.cards.size() == 2u);
  BOOST_TEST(plan.cards[0].in_run == "sim:0");
  BOOST_TEST(plan.cards[0].worker_name == "sim:2");
  BOOST_TEST(plan.cards[0].uuid == "SIM-box-1-2");
  BOOST_TEST(plan.cards[0].total_bytes == 4 * gib);
  BOOST_TEST(plan.cards[1].uuid == "SIM-CARD-A-0");
  BOOST_TEST(plan.environment().at("CODEFYUI_SIM_DEVICES") == plan.sim_devices);
}

BOOST_AUTO_TEST_CASE(mixed_kinds_are_numbered_per_kind_and_the_first_card_is_the_device) {
  auto plan = plan_of({"sim:1", "cuda:2", "cpu", "sim:0", "cuda:0"});
  BOOST_TEST(plan.device == "sim:0");
  BOOST_TEST((plan.visible_devices == names{"sim:0", "cuda:0", "cpu", "sim:1", "cuda:1"}));
  BOOST_TEST((plan.device_aliases == aliases{{"sim:0", "sim:1"},
                                             {"cuda:0", "cuda:2"},
                                             {"cpu", "cpu"},
                                             {"sim:1", "sim:0"},
                                             {"cuda:1", "cuda:0"}}));
  BOOST_TEST(plan.cuda_visible_devices == "2,0");
  BOOST_TEST(plan.sim_devices
             == std::to_string(2 * gib) + "=SIM-CARD-A-0," + std::to_string(1 * gib) + "=SIM-box-1-0");
  BOOST_TEST((plan.environment()
              == aliases{{"CODEFYUI_SIM_DEVICES", plan.sim_devices}, {"CUDA_VISIBLE_DEVICES", "2,0"}}));
}

BOOST_AUTO_TEST_CASE(a_device_the_worker_does_not_offer_is_refused_by_name) {
  BOOST_TEST(refusal_of({"sim:3"}) == "this worker does not offer sim:3");
  BOOST_TEST(refusal_of({"sim:0", "cuda:1"}) == "this worker does not offer cuda:1");
  auto none = plan_launch({"sim:0"}, {});
  BOOST_TEST(std::get<std::string>(none) == "this worker does not offer sim:0");
}

BOOST_AUTO_TEST_CASE(a_run_with_no_device_is_refused) {
  BOOST_TEST(refusal_of({}) == "the run names no device");
}

BOOST_AUTO_TEST_SUITE_END()
