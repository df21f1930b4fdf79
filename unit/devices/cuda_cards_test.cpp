#include <boost/test/unit_test.hpp>

#include "devices/cuda_cards.hpp"
#include "devices/host_inventory.hpp"
#include "testkit/fake_nvml.hpp"

using namespace cdui;
using namespace cdui::devices;

namespace {

constexpr std::int64_t gib = 1LL << 30;

gpu_card card(unsigned index, std::string uuid, std::int64_t total = 80 * gib) {
  gpu_card c;
  c.index = index;
  c.name = "NVIDIA H100 80GB HBM3";
  c.uuid = std::move(uuid);
  c.memory = {total, total, 0};
  c.compute_major = 9;
  return c;
}

const std::string uuid_a = "GPU-aaaa1111-0000-0000-0000-000000000000";
const std::string uuid_b = "GPU-bbbb2222-0000-0000-0000-000000000000";
const std::string uuid_c = "GPU-bbbb3333-0000-0000-0000-000000000000";

std::vector<gpu_card> three() { return {card(0, uuid_a), card(1, uuid_b), card(2, uuid_c)}; }

std::vector<std::string> uuids(const std::vector<gpu_card>& cards) {
  std::vector<std::string> out;
  for (const auto& c : cards)
    out.push_back(c.uuid);
  return out;
}

using strings = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_cards_test)

BOOST_AUTO_TEST_CASE(cuda_visible_devices_picks_and_orders_the_cards_as_cuda_reads_it) {
  BOOST_TEST((uuids(cuda_visible_cards(three(), nullptr)) == strings{uuid_a, uuid_b, uuid_c}));
  BOOST_TEST((uuids(cuda_visible_cards(three(), "2,0")) == strings{uuid_c, uuid_a}));
  BOOST_TEST((uuids(cuda_visible_cards(three(), " 1 ")) == strings{uuid_b}));
  // A UUID, or a prefix that names one card, with or without "GPU-".
  BOOST_TEST((uuids(cuda_visible_cards(three(), "GPU-bbbb3333,aaaa")) == strings{uuid_c, uuid_a}));
  // The list ends at an entry that names no card, an ambiguous prefix, or a card named twice.
  BOOST_TEST((uuids(cuda_visible_cards(three(), "0,7,1")) == strings{uuid_a}));
  BOOST_TEST((uuids(cuda_visible_cards(three(), "GPU-bbbb,0")) == strings{}));
  BOOST_TEST((uuids(cuda_visible_cards(three(), "1,1,0")) == strings{uuid_b}));
  BOOST_TEST((uuids(cuda_visible_cards(three(), "")) == strings{}));
  BOOST_TEST((uuids(cuda_visible_cards(three(), "-1")) == strings{}));
  BOOST_TEST((uuids(cuda_visible_cards(three(), "99999999999999999999")) == strings{}));
}

BOOST_AUTO_TEST_CASE(each_cuda_device_is_offered_as_the_card_with_its_uuid) {
  // torch's cuda:0 is the driver's second card (CUDA orders by speed, NVML by PCI bus).
  auto offers = cuda_offers(2, {uuid_b, uuid_a}, {card(0, uuid_a), card(1, uuid_b, 40 * gib)}, "");
  BOOST_REQUIRE(offers.size() == 2u);
  BOOST_TEST(offers[0].name == "cuda:0");
  BOOST_TEST(offers[0].uuid == uuid_b);
  BOOST_TEST(offers[0].total_bytes == 40 * gib);
  BOOST_TEST(offers[0].label == "NVIDIA H100 80GB HBM3 (GPU-bbbb2222, 40.00 GiB, compute 9.0)");
  BOOST_TEST(offers[0].slot_limit == accelerator_slot_limit);
  BOOST_TEST(!offers[0].simulated);
  BOOST_TEST(offers[0].compute_major == 9);
  BOOST_TEST(cuda_bf16_text(offers[0].compute_major, offers[0].compute_minor) == "native (compute 9.0)");
  BOOST_TEST(offers[1].name == "cuda:1");
  BOOST_TEST(offers[1].uuid == uuid_a);
  BOOST_TEST(offers[1].total_bytes == 80 * gib);
  // Without the runtime's UUIDs, the visible cards in order.
  auto by_order = cuda_offers(1, {}, {card(0, uuid_c)}, "");
  BOOST_TEST(by_order[0].uuid == uuid_c);
}

BOOST_AUTO_TEST_CASE(a_cuda_device_nvml_does_not_describe_is_offered_with_its_memory_unknown_and_why) {
  auto offers = cuda_offers(1, {uuid_a}, {}, "no NVIDIA driver: libnvidia-ml.so.1 cannot be loaded");
  BOOST_REQUIRE(offers.size() == 1u);
  BOOST_TEST(offers[0].total_bytes == 0);
  BOOST_TEST(offers[0].uuid == uuid_a);
  BOOST_TEST(cuda_bf16_text(offers[0].compute_major, offers[0].compute_minor) == "-");
  BOOST_TEST(offers[0].label
             == "NVIDIA CUDA #0 (memory unknown: no NVIDIA driver: libnvidia-ml.so.1 cannot be loaded)");
}

BOOST_AUTO_TEST_CASE(uuids_read_as_the_driver_writes_them) {
  const unsigned char bytes[16] = {0x1a, 0x2b, 0x3c, 0x4d, 0x00, 0x11, 0x22, 0x33,
                                   0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xff};
  BOOST_TEST(gpu_uuid_text(bytes) == "GPU-1a2b3c4d-0011-2233-4455-66778899aaff");
  BOOST_TEST(short_uuid("GPU-1a2b3c4d-0011-2233-4455-66778899aaff") == "GPU-1a2b3c4d");
  BOOST_TEST(short_uuid("MIG-1a2b3c4d-0011") == "MIG-1a2b3c4d");
  BOOST_TEST(short_uuid("card-A") == "card");
}

BOOST_AUTO_TEST_CASE(a_host_without_offered_cuda_cards_says_why) {
  // CUDA cards offered: nothing to say.
  BOOST_TEST(cuda_note(1, true, three(), "").empty());
  // A libtorch without CUDA on a machine with cards (Debian's 1.13 on a GPU host).
  BOOST_TEST(cuda_note(0, false, {card(0, uuid_a)}, "")
             == "1 NVIDIA card (NVIDIA H100 80GB HBM3) not offered: this cdui's libtorch has no CUDA; build it "
                "with -DCDUI_TORCH=pip (docs/gpu.md)");
  // ... and on a machine without: nothing to say.
  BOOST_TEST(cuda_note(0, false, {}, "no NVIDIA driver: x").empty());
  // A libtorch with CUDA: no driver, no cards, or none visible.
  BOOST_TEST(cuda_note(0, true, {}, "no NVIDIA driver: x") == "no CUDA cards: no NVIDIA driver: x");
  BOOST_TEST(cuda_note(0, true, {}, "") == "no CUDA cards: the NVIDIA driver lists none");
  BOOST_TEST(cuda_note(0, true, {card(0, uuid_a)}, "")
             == "no CUDA cards: the driver has 1 (NVIDIA H100 80GB HBM3) but CUDA sees none of them "
                "(CUDA_VISIBLE_DEVICES?)");
}

BOOST_AUTO_TEST_CASE(the_inventory_reads_the_drivers_cards) {
  // This machine has no GPU: the fake driver describes one that torch cannot see, and the
  // inventory says why it is not offered, in either torch configuration.
  test::fake_nvml fake{{{"NVIDIA H200", uuid_a, 141 * gib, 0, "9.0", {}}}};
  auto inventory = host_inventory::probe("");
  BOOST_TEST(inventory.counts().cuda_count == 0);
  BOOST_TEST(inventory.devices().size() == 1u);
  BOOST_TEST(inventory.cuda_note().find("NVIDIA H200") != std::string::npos);
  // A run's process counts its cards and does not ask the driver about them.
  BOOST_TEST(host_inventory::probe("", cuda_detail::counted).cuda_note().empty());
}

BOOST_AUTO_TEST_SUITE_END()
