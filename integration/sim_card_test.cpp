// A sim card's memory counted across processes: an agent's heartbeat sees memory that a process
// outside cdui's runs (`cdui sim-hold`, another user's job) takes on its card.
#include <boost/test/unit_test.hpp>

#include <filesystem>

#include "integration/worker_helpers.hpp"
#include "testkit/sim_hold.hpp"
#include "testkit/wait.hpp"

using namespace std::chrono_literals;
using namespace cdui::test;
using nlohmann::json;

namespace {

constexpr std::int64_t mib = 1LL << 20;

/// The free bytes of the agent `name`'s first sim card in its latest heartbeat.
std::int64_t sim_free(const server_process& srv, const std::string& name) {
  auto w = worker(srv, name);
  return w.is_null() ? -1 : w["devices"][1]["free_bytes"].get<std::int64_t>();
}

} // namespace

BOOST_AUTO_TEST_SUITE(sim_card_test)

BOOST_AUTO_TEST_CASE(an_agents_heartbeat_counts_memory_another_process_takes_on_its_sim_card) {
  temp_home home;
  server_process srv{home, fast_heartbeats};
  auto agent = start_agent(home, "w-sim", "1GiB");
  auto w = await_worker(srv, "w-sim", "online");
  BOOST_REQUIRE(w["devices"][1]["name"] == "sim:0");
  auto uuid = w["devices"][1]["uuid"].get<std::string>();
  auto segment = std::filesystem::path{"/dev/shm/cdui-sim-" + uuid};
  // Should the test fail with the agent killed, its card's segment goes anyway.
  std::shared_ptr<void> remove_segment(nullptr, [&](void*) { std::filesystem::remove(segment); });
  BOOST_TEST(sim_free(srv, "w-sim") == 1024 * mib);
  {
    auto holder = hold_sim_memory(uuid, "256MiB");
    BOOST_TEST(eventually([&] { return sim_free(srv, "w-sim") == 768 * mib; }), sim_free(srv, "w-sim"));
    // More than the card has left is refused, as on a real card.
    auto refused = run_cdui({"sim-hold", uuid, "800MiB"}, {}, 30s);
    BOOST_TEST(refused.code == 1);
    BOOST_TEST(refused.err.find("free of its 1.00 GiB") != std::string::npos, refused.err);
    holder->signal(SIGKILL);  // ends holding its bytes: the next heartbeat reclaims them
    holder->wait_for(10s);
    BOOST_TEST(eventually([&] { return sim_free(srv, "w-sim") == 1024 * mib; }), sim_free(srv, "w-sim"));
  }
  // The agent's own card goes with it.
  BOOST_TEST(agent->stop(30s) < 30.0);
  BOOST_TEST(!std::filesystem::exists(segment));
}

BOOST_AUTO_TEST_SUITE_END()
