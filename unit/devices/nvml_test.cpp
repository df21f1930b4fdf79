#include <boost/test/unit_test.hpp>

#include "devices/card_memory.hpp"
#include "devices/nvml.hpp"
#include "testkit/fake_nvml.hpp"

using namespace cdui;
using namespace cdui::devices;

namespace {

constexpr std::int64_t gib = 1LL << 30;

/// Two cards as NVML lists them: an idle H100, and an A100 where another user's process holds 20 GiB.
std::vector<test::fake_gpu> two_cards() {
  return {{"NVIDIA H100 80GB HBM3", "GPU-1a2b3c4d-0000-1111-2222-333344445555", 80 * gib, 512LL << 20, "9.0", {}},
          {"NVIDIA A100-SXM4-40GB", "GPU-99887766-aaaa-bbbb-cccc-ddddeeeeffff", 40 * gib, 20 * gib + (512LL << 20),
           "8.0", {{4242, 20 * gib}}}};
}

std::shared_ptr<nvml> opened(const std::string& path) {
  auto library = nvml::open(path);
  if (auto* why = std::get_if<std::string>(&library))
    BOOST_FAIL("NVML did not open: " << *why);
  return std::get<std::shared_ptr<nvml>>(library);
}

} // namespace

BOOST_AUTO_TEST_SUITE(nvml_test)

BOOST_AUTO_TEST_CASE(each_card_has_its_name_uuid_memory_capability_and_the_processes_on_it) {
  test::fake_nvml fake{two_cards()};
  auto listed = opened(test::fake_nvml::library())->cards();
  BOOST_REQUIRE(std::holds_alternative<std::vector<gpu_card>>(listed));
  const auto& cards = std::get<std::vector<gpu_card>>(listed);
  BOOST_REQUIRE(cards.size() == 2u);
  BOOST_TEST(cards[0].index == 0u);
  BOOST_TEST(cards[0].name == "NVIDIA H100 80GB HBM3");
  BOOST_TEST(cards[0].uuid == "GPU-1a2b3c4d-0000-1111-2222-333344445555");
  BOOST_TEST(cards[0].memory.total_bytes == 80 * gib);
  BOOST_TEST(cards[0].memory.free_bytes == 80 * gib - (512LL << 20));
  BOOST_TEST(cards[0].compute_major == 9);
  BOOST_TEST(cards[0].processes.empty());
  // Memory another process holds counts: the card's free figure is the driver's, as nvidia-smi's.
  BOOST_TEST(cards[1].index == 1u);
  BOOST_TEST(cards[1].memory.used_bytes == 20 * gib + (512LL << 20));
  BOOST_TEST(cards[1].memory.free_bytes == 20 * gib - (512LL << 20));
  BOOST_TEST(cards[1].compute_major == 8);
  BOOST_TEST(cards[1].compute_minor == 0);
  BOOST_REQUIRE(cards[1].processes.size() == 1u);
  BOOST_TEST(cards[1].processes[0].pid == 4242u);
  BOOST_TEST(cards[1].processes[0].used_bytes == 20 * gib);
}

BOOST_AUTO_TEST_CASE(a_cards_free_figure_follows_what_other_processes_take) {
  auto cards = two_cards();
  test::fake_nvml fake{cards};
  auto library = opened(test::fake_nvml::library());
  const auto& uuid = cards[0].uuid;
  BOOST_TEST(library->memory(uuid)->free_bytes == 80 * gib - (512LL << 20));
  // A Python process takes 20 GiB of the H100.
  cards[0].used_bytes += 20 * gib;
  cards[0].processes.push_back({777, 20 * gib});
  fake.set(cards);
  BOOST_TEST(library->memory(uuid)->free_bytes == 60 * gib - (512LL << 20));
  BOOST_TEST(!library->memory("GPU-not-a-card").has_value());
  BOOST_TEST(!library->memory("").has_value());
  // What one process holds there (a run's CUDA context is measured by it): none for a process the
  // driver lists on another card only, or not at all, or without its figure.
  BOOST_TEST(*library->held_by(uuid, 777) == 20 * gib);
  BOOST_TEST(!library->held_by(uuid, 4242).has_value());
  BOOST_TEST(*library->held_by(cards[1].uuid, 4242) == 20 * gib);
  BOOST_TEST(!library->held_by(uuid, 1).has_value());
  BOOST_TEST(!library->held_by("GPU-not-a-card", 777).has_value());
  cards[0].processes.push_back({778, -1});  // NVML_VALUE_NOT_AVAILABLE: another user's, unseen
  fake.set(cards);
  BOOST_TEST(!library->held_by(uuid, 778).has_value());
  // What a heartbeat reports for the card: the same figure, through this process's NVML.
  BOOST_TEST(card_free_bytes("cuda", uuid, 80 * gib) == 60 * gib - (512LL << 20));
  // A card NVML does not know keeps its total; a sim card is not NVML's.
  BOOST_TEST(card_free_bytes("cuda", "GPU-not-a-card", 8 * gib) == 8 * gib);
  BOOST_TEST(card_free_bytes("cuda", "", 8 * gib) == 8 * gib);
}

BOOST_AUTO_TEST_CASE(without_a_driver_it_says_why_instead_of_failing) {
  auto missing = nvml::open("/nonexistent/libnvidia-ml.so.1");
  BOOST_REQUIRE(std::holds_alternative<std::string>(missing));
  BOOST_TEST(std::get<std::string>(missing).find("no NVIDIA driver: /nonexistent/libnvidia-ml.so.1 cannot be loaded")
             == 0u);
  // The library is there but the driver is not loaded (the fake with no cards file).
  auto not_started = nvml::open(test::fake_nvml::library());
  BOOST_REQUIRE(std::holds_alternative<std::string>(not_started));
  BOOST_TEST(std::get<std::string>(not_started)
             == "the NVIDIA driver did not start: nvmlInit: Driver Not Loaded (NVML 9)");
}

BOOST_AUTO_TEST_CASE(a_library_that_is_not_nvml_is_named_with_what_it_lacks) {
  auto other = nvml::open("libz.so.1");
  BOOST_REQUIRE(std::holds_alternative<std::string>(other));
  BOOST_TEST(std::get<std::string>(other).find("libz.so.1 is not an NVML this cdui can use: it lacks nvmlInit_v2")
             == 0u);
}

BOOST_AUTO_TEST_CASE(the_library_path_comes_from_the_environment_else_the_drivers_soname) {
  {
    test::scoped_env unset{nvml_library_env, ""};
    BOOST_TEST(nvml_library_path() == "libnvidia-ml.so.1");
  }
  test::scoped_env set{nvml_library_env, "/opt/driver/libnvidia-ml.so.1"};
  BOOST_TEST(nvml_library_path() == "/opt/driver/libnvidia-ml.so.1");
}

BOOST_AUTO_TEST_SUITE_END()
