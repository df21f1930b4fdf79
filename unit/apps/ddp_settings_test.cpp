// A DDP rank's settings from run.json (apps/ddp_settings.hpp): within one worker and across workers,
// and an error naming the field for what an agent would never write.
#include <boost/test/unit_test.hpp>

#include "apps/ddp_settings.hpp"

using cdui::apps::ddp_settings;
using nlohmann::json;

namespace {

json across(json store, json first_rank, json devices) {
  return {{"visible_devices", {"sim:0", "sim:1"}},
          {"ddp", {{"store", std::move(store)}, {"first_rank", std::move(first_rank)}, {"devices", std::move(devices)}}}};
}

const json four_cards = {"w1/cuda:0", "w1/cuda:1", "w2/cuda:0", "w2/cuda:1"};

/// The error for rank `rank` of `world` of `run`, with the secret set.
std::string error_of(const json& run, int rank = 2, int world = 4) {
  cdui::runtime::ddp_rank out;
  auto error = ddp_settings(run, "/runs/x", rank, world, {"s", nullptr}, out);
  return error.value_or("");
}

} // namespace

BOOST_AUTO_TEST_SUITE(ddp_settings_test)

BOOST_AUTO_TEST_CASE(within_one_worker_rank_k_trains_on_the_runs_card_k_and_meets_at_its_folder) {
  cdui::runtime::ddp_rank out;
  auto error = ddp_settings({{"visible_devices", {"sim:0", "sim:1"}}}, "/runs/x", 1, 2, {nullptr, "5"}, out);
  BOOST_TEST(!error);
  BOOST_TEST(out.device == "sim:1");
  BOOST_TEST(out.devices == (std::vector<std::string>{"sim:0", "sim:1"}));
  BOOST_TEST(out.rendezvous == "/runs/x/ddp.store");
  BOOST_TEST(out.store_host.empty());
  BOOST_TEST(out.timeout.count() == 5000);
  BOOST_TEST(error_of({{"visible_devices", {"sim:0"}}}, 1, 2)
             == "the run has 1 cards (run.json's visible_devices), not 2");
}

BOOST_AUTO_TEST_CASE(across_workers_a_rank_trains_on_its_workers_card_and_meets_at_rank_0s_store) {
  cdui::runtime::ddp_rank out;
  auto run = across({{"host", "10.0.0.5"}, {"port", 41234}}, 2, four_cards);
  auto error = ddp_settings(run, "/runs/x", 3, 4, {"the secret", nullptr}, out);
  BOOST_TEST(!error);
  BOOST_TEST(out.device == "sim:1");  // this worker's second card: rank 3 - first rank 2
  BOOST_TEST(out.devices == four_cards.get<std::vector<std::string>>());
  BOOST_TEST(out.store_host == "10.0.0.5");
  BOOST_TEST(out.store_port == 41234);
  BOOST_TEST(out.secret == "the secret");
}

BOOST_AUTO_TEST_CASE(what_no_agent_writes_is_refused_naming_the_field) {
  json store{{"host", "10.0.0.5"}, {"port", 1}};
  BOOST_TEST(error_of(across({{"port", 1}}, 2, four_cards))
             == "run.json's ddp.store.host is not the address of rank 0's rendezvous");
  BOOST_TEST(error_of(across({{"host", ""}, {"port", 1}}, 2, four_cards))
             == "run.json's ddp.store.host is not the address of rank 0's rendezvous");
  BOOST_TEST(error_of(across({{"host", "h"}, {"port", 70000}}, 2, four_cards))
             == "run.json's ddp.store.port is not a port (0 to 65535)");
  BOOST_TEST(error_of(across(store, "2", four_cards)) == "run.json's ddp.first_rank is not a rank below 4");
  BOOST_TEST(error_of(across(store, 4, four_cards)) == "run.json's ddp.first_rank is not a rank below 4");
  BOOST_TEST(error_of(across(store, 2, {"a", "b"})) == "run.json's ddp.devices is not a list of the 4 ranks' cards");
  BOOST_TEST(error_of(across(store, 2, {"a", "b", "c", 4})) == "run.json's ddp.devices is not a list of the 4 ranks' cards");
  BOOST_TEST(error_of({{"visible_devices", "sim:0"}}) == "run.json's visible_devices is not a list of the run's cards");
  BOOST_TEST(error_of(json{{"visible_devices", {"sim:0"}}, {"ddp", "x"}})
             == "run.json's ddp.store.host is not the address of rank 0's rendezvous");
  // Rank 1 is not among this worker's ranks (2 and 3).
  BOOST_TEST(error_of(across(store, 2, four_cards), 1)
             == "rank 1 is not on this worker: its ranks are 2 to 3 (run.json's ddp.first_rank and visible_devices)");
  cdui::runtime::ddp_rank out;
  BOOST_TEST(ddp_settings(across(store, 2, four_cards), "/runs/x", 2, 4, {"", nullptr}, out).value_or("")
             == "a rank across workers meets the others only with the run's secret, and CDUI_DDP_SECRET is not set");
}

BOOST_AUTO_TEST_SUITE_END()
