#include <boost/test/unit_test.hpp>

#include "actors/policy/card_groups.hpp"

using namespace cdui;
using namespace cdui::policy;

namespace {

/// This server offers one sim card, "card-A", with a limit of 2.
local_devices host() {
  local_devices local;
  local.devices = {{"cpu", "CPU", 2, false, 0, ""}, {"sim:0", "sim 0", 2, true, 1LL << 30, "card-A"}};
  local.counts.sim_count = 1;
  return local;
}

using names = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_SUITE(card_groups_test)

BOOST_AUTO_TEST_CASE(a_workers_slot_takes_its_override_else_the_shared_cards_limit_else_the_default) {
  admission slots;
  slots.set_limit("sim:0", 2);
  std::map<std::string, int> overrides{{"w1/cuda:0", 3}};
  BOOST_TEST(worker_slot_limit({"w1", "cuda:0"}, "card-Q", overrides, host(), slots) == 3);
  BOOST_TEST(worker_slot_limit({"w1", "sim:0"}, "card-A", overrides, host(), slots) == 2);
  BOOST_TEST(worker_slot_limit({"w1", "sim:1"}, "card-Q", overrides, host(), slots) == 1);
  BOOST_TEST(worker_slot_limit({"w1", "cpu"}, "", overrides, host(), slots) == 2);
  // A CPU is never a shared card, even with a UUID.
  BOOST_TEST(worker_slot_limit({"w1", "cpu"}, "card-A", {}, host(), slots) == 2);
}

BOOST_AUTO_TEST_CASE(a_card_is_its_uuid_for_every_offerer_and_a_cpu_or_a_card_without_one_its_key) {
  BOOST_TEST(card_id({"", "sim:0"}, "card-A") == "uuid:card-A");
  BOOST_TEST(card_id({"w1", "sim:3"}, "card-A") == "uuid:card-A");
  BOOST_TEST(card_id({"w1", "cuda:0"}, "") == "w1/cuda:0");
  BOOST_TEST(card_id({"w1", "cpu"}, "card-A") == "w1/cpu");
  BOOST_TEST(card_id({"", "cpu"}, "") == "cpu");
}

BOOST_AUTO_TEST_CASE(two_offerers_of_one_card_share_one_budget) {
  admission slots;
  slots.set_limit("sim:0", 2);
  slots.set_limit("w1/sim:3", 2);
  known_workers workers{{"w1", {{"cpu", "sim:3"}, {"", "card-A"}, true, false}}};
  card_groups groups;
  auto lowered = groups.regroup(slots, host(), workers, "w1");
  BOOST_TEST(lowered.empty());
  BOOST_TEST((slots.group_keys("card:card-A") == names{"sim:0", "w1/sim:3"}));
  BOOST_TEST(slots.group_limit("card:card-A") == 2);
  // The budget holds across both keys: two runs in all, whichever key they came by.
  slots.enqueue("a", {"sim:0"});
  slots.enqueue("b", {"w1/sim:3"});
  slots.enqueue("c", {"w1/sim:3"});
  BOOST_TEST((slots.admit() == names{"a", "b"}));
  BOOST_TEST(slots.group_running("card:card-A") == 2u);
  slots.release("a");
  BOOST_TEST((slots.admit() == names{"c"}));
}

BOOST_AUTO_TEST_CASE(a_cuda_card_offered_by_this_server_and_an_agent_is_one_card_by_its_nvml_uuid) {
  // What host_inventory makes of a CUDA card on both sides: the driver's UUID (NVML).
  const std::string uuid = "GPU-1a2b3c4d-0011-2233-4455-66778899aaff";
  local_devices local;
  local.devices = {{"cpu", "CPU", 2, false, 0, ""},
                   {"cuda:0", "NVIDIA H100 80GB HBM3 (GPU-1a2b3c4d, 79.65 GiB)", 1, false, 85520809984, uuid}};
  local.counts.cuda_count = 1;
  admission slots;
  slots.set_limit("cuda:0", 1);
  slots.set_limit("w1/cuda:0", 1);
  known_workers workers{{"w1", {{"cpu", "cuda:0"}, {"", uuid}, true, false}}};
  card_groups groups;
  BOOST_TEST(groups.regroup(slots, local, workers, "w1").empty());
  BOOST_TEST(card_id({"", "cuda:0"}, uuid) == card_id({"w1", "cuda:0"}, uuid));
  BOOST_TEST((slots.group_keys("card:" + uuid) == names{"cuda:0", "w1/cuda:0"}));
  // One run on the card at a time, whichever offerer it came by.
  slots.enqueue("a", {"cuda:0"});
  slots.enqueue("b", {"w1/cuda:0"});
  BOOST_TEST((slots.admit() == names{"a"}));
  slots.release("a");
  BOOST_TEST((slots.admit() == names{"b"}));
}

BOOST_AUTO_TEST_CASE(a_smaller_limit_lowers_the_card_and_the_joiner_hears_of_it_once) {
  admission slots;
  slots.set_limit("sim:0", 1);
  slots.set_limit("w1/sim:3", 3);  // an override above this server's
  known_workers workers{{"w1", {{"sim:3"}, {"card-A"}, true, false}}};
  card_groups groups;
  auto lowered = groups.regroup(slots, host(), workers, "w1");
  BOOST_REQUIRE(lowered.size() == 1u);
  BOOST_TEST(lowered[0].key == "w1/sim:3");
  BOOST_TEST(lowered[0].sentence()
             == "w1/sim:3: its limit of 3 runs is lowered to 1: sim:0 offers the same card (card-A) "
                "with that limit");
  BOOST_TEST(slots.group_limit("card:card-A") == 1);
  // Said once, not at every regroup; another worker's joining says nothing about it.
  BOOST_TEST(groups.regroup(slots, host(), workers, "w1").empty());
  BOOST_TEST(groups.regroup(slots, host(), workers, "w2").empty());
}

BOOST_AUTO_TEST_CASE(an_offerer_going_offline_no_longer_sets_the_limit) {
  local_devices none;  // this server offers no card: two workers share one
  admission slots;
  slots.set_limit("w1/sim:0", 1);
  slots.set_limit("w2/sim:0", 2);
  known_workers workers{{"w1", {{"sim:0"}, {"card-K"}, true, false}},
                        {"w2", {{"sim:0"}, {"card-K"}, true, false}}};
  card_groups groups;
  groups.regroup(slots, none, workers, "w2");
  BOOST_TEST(slots.group_limit("card:card-K") == 1);
  workers["w1"].open = false;
  groups.regroup(slots, none, workers, "w1");
  BOOST_TEST(slots.group_limit("card:card-K") == 2);
  // With nobody online, the smallest of all.
  workers["w2"].open = false;
  groups.regroup(slots, none, workers, "w2");
  BOOST_TEST(slots.group_limit("card:card-K") == 1);
  // A worker that leaves the table leaves the group, and its key's groups are cleared.
  workers.erase("w1");
  workers["w2"].open = true;
  groups.regroup(slots, none, workers, "");
  for (const auto& s : slots.slots())
    BOOST_TEST(s.groups.empty(), s.key);
}

BOOST_AUTO_TEST_CASE(a_one_shot_workers_devices_admit_one_run_between_them) {
  admission slots;
  known_workers workers{{"shot", {{"cpu", "sim:0"}, {"", "card-S"}, true, true}}};
  card_groups groups;
  groups.regroup(slots, host(), workers, "shot");
  BOOST_TEST(slots.group_limit("one-shot:shot") == 1);
  BOOST_TEST((slots.group_keys("one-shot:shot") == names{"shot/cpu", "shot/sim:0"}));
  BOOST_TEST(one_shot_worker("one-shot:shot") == "shot");  // for the sentences of waiting runs
  BOOST_TEST(one_shot_worker("card:card-S").empty());
  slots.enqueue("a", {"shot/cpu"});
  slots.enqueue("b", {"shot/sim:0"});
  BOOST_TEST((slots.admit() == names{"a"}));
}

BOOST_AUTO_TEST_SUITE_END()
