#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include "devices/host_inventory.hpp"
#include "devices/sim_devices.hpp"

using namespace cdui::devices;

BOOST_AUTO_TEST_SUITE(sim_devices_test)

BOOST_AUTO_TEST_CASE(sizes_read_binary_and_decimal_units) {
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("8GiB")) == 8LL << 30);
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("512MiB")) == 512LL << 20);
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("1.5 GiB")) == 3LL << 29);
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("2GB")) == 2'000'000'000LL);
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("4096")) == 4096);
  for (auto bad : {"", "GiB", "8Gb", "-1GiB", "0", "eight", "M", "64m", "64MM"})
    BOOST_TEST(std::holds_alternative<std::string>(parse_bytes(bad)), bad);
}

BOOST_AUTO_TEST_CASE(sizes_take_the_short_binary_units_of_docker_and_kubectl) {
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("64M")) == 64LL << 20);
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("64Mi")) == 64LL << 20);
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("64G")) == 64LL << 30);
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("1.5G")) == 3LL << 29);
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("512K")) == 512LL << 10);
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("2T")) == 2LL << 40);
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("2 Gi")) == 2LL << 30);
}

BOOST_AUTO_TEST_CASE(a_spec_lists_cards_with_their_memory_and_distinct_uuids) {
  auto cards = std::get<std::vector<sim_card>>(parse_sim_devices("2x8GiB, 4GiB"));
  BOOST_REQUIRE(cards.size() == 3u);
  BOOST_TEST(cards[0].total_bytes == 8LL << 30);
  BOOST_TEST(cards[2].total_bytes == 4LL << 30);
  BOOST_TEST(cards[2].index == 2);
  BOOST_TEST(cards[0].uuid != cards[1].uuid);
  BOOST_TEST(std::get<std::vector<sim_card>>(parse_sim_devices("")).empty());
}

BOOST_AUTO_TEST_CASE(a_cards_uuid_is_its_process_own_unless_named_as_shared) {
  auto own = std::get<std::vector<sim_card>>(parse_sim_devices("1GiB"));
  BOOST_TEST(own[0].uuid.find("-" + std::to_string(::getpid()) + "-0") != std::string::npos, own[0].uuid);
  // Named: the same UUIDs in every process given that name (one physical card, two offerers).
  auto shared = std::get<std::vector<sim_card>>(parse_sim_devices("1GiB, 2x1GiB@box-A"));
  BOOST_REQUIRE(shared.size() == 3u);
  BOOST_TEST(shared[1].uuid == "SIM-box-A-0");
  BOOST_TEST(shared[2].uuid == "SIM-box-A-1");
  BOOST_TEST(shared[2].index == 2);
  auto err = std::get<std::string>(parse_sim_devices("1GiB@bad/name"));
  BOOST_TEST(err.find("the name after '@'") != std::string::npos, err);
  BOOST_TEST(std::holds_alternative<std::string>(parse_sim_devices("1GiB@")));
}

BOOST_AUTO_TEST_CASE(a_card_can_be_given_as_another_processes_card_by_its_uuid) {
  // How a worker run's process is given its worker's cards: their sizes and UUIDs.
  auto cards = std::get<std::vector<sim_card>>(parse_sim_devices("1073741824=SIM-box-7-1,2GiB"));
  BOOST_REQUIRE(cards.size() == 2u);
  BOOST_TEST(cards[0].uuid == "SIM-box-7-1");
  BOOST_TEST(cards[0].total_bytes == 1LL << 30);
  BOOST_TEST(!cards[0].own);
  BOOST_TEST(cards[1].own);
  BOOST_TEST(cards[1].uuid.rfind(own_sim_card_prefix(), 0) == 0, cards[1].uuid);
  BOOST_TEST(!std::get<std::vector<sim_card>>(parse_sim_devices("1GiB@box")).front().own);
  for (auto bad : {"1GiB=", "1GiB=a/b", "2x1GiB=SIM-a-0", "1GiB@box=SIM-a-0"}) {
    auto err = parse_sim_devices(bad);
    BOOST_TEST(std::holds_alternative<std::string>(err), bad);
  }
}

BOOST_AUTO_TEST_CASE(a_bad_entry_is_named) {
  auto err = std::get<std::string>(parse_sim_devices("2x8GiB,0x1GiB"));
  BOOST_TEST(err.find("'0x1GiB'") != std::string::npos, err);
  err = std::get<std::string>(parse_sim_devices("2x8GiB,lots"));
  BOOST_TEST(err.find("'lots'") != std::string::npos, err);
  // Found by slot_limits_fuzz: a size below one byte made a card of 0 bytes.
  BOOST_TEST(std::holds_alternative<std::string>(parse_sim_devices("0.15")));
  BOOST_TEST(std::holds_alternative<std::string>(parse_bytes("0.5B")));
  BOOST_TEST(std::get<std::int64_t>(parse_bytes("1B")) == 1);
}

BOOST_AUTO_TEST_CASE(the_inventory_offers_sim_cards_as_single_slot_accelerators) {
  auto inv = host_inventory::probe("2x1GiB");
  BOOST_REQUIRE(inv.devices().size() == 3u);
  BOOST_TEST(inv.devices()[0].name == "cpu");
  BOOST_TEST(inv.devices()[0].slot_limit == 2);
  BOOST_TEST(inv.devices()[1].name == "sim:0");
  BOOST_TEST(inv.devices()[1].simulated);
  BOOST_TEST(inv.devices()[1].slot_limit == 1);
  BOOST_TEST(inv.devices()[2].total_bytes == 1LL << 30);
  BOOST_TEST(inv.counts().sim_count == 2);
  BOOST_CHECK_THROW(host_inventory::probe("3xfoo"), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
