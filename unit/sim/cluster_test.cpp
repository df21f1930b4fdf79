// The cluster description (sim/cluster.hpp): its text, and the cards in the order a run for any
// worker looks at them.
#include <boost/test/unit_test.hpp>

#include "messages/run_request.hpp"
#include "sim/cluster.hpp"

using cdui::sim::cluster_spec;
using cdui::sim::lay_out;

BOOST_AUTO_TEST_SUITE(cluster_test)

BOOST_AUTO_TEST_CASE(a_cluster_is_groups_of_workers_cards_and_memory) {
  auto parsed = cluster_spec::parse("1000x8x80+2x4x40.5");
  BOOST_REQUIRE(std::holds_alternative<cluster_spec>(parsed));
  const auto& c = std::get<cluster_spec>(parsed);
  BOOST_TEST(c.workers() == 1002u);
  BOOST_TEST(c.cards() == 8008u);
  BOOST_TEST(c.most_cards() == 8);
  BOOST_TEST(c.largest_card() == static_cast<std::int64_t>(80 * cdui::bytes_per_gib));
  BOOST_TEST(c.text() == "1000x8x80+2x4x40.5");
}

BOOST_AUTO_TEST_CASE(a_malformed_cluster_is_refused_naming_the_part) {
  auto parsed = cluster_spec::parse("4x8x80+4x8");
  BOOST_REQUIRE(std::holds_alternative<std::string>(parsed));
  BOOST_TEST(std::get<std::string>(parsed) == "cluster '4x8' is not WORKERSxCARDSxGIB (e.g. 1000x8x80)");
  BOOST_TEST(std::holds_alternative<std::string>(cluster_spec::parse("0x8x80")));
  BOOST_TEST(std::holds_alternative<std::string>(cluster_spec::parse("1x65x80")));
}

BOOST_AUTO_TEST_CASE(cards_come_in_worker_name_order_then_device_order) {
  auto layout = lay_out(std::get<cluster_spec>(cluster_spec::parse("12x2x10")));
  BOOST_TEST(layout.worker_names.front() == "w0000");
  BOOST_TEST(layout.worker_names.back() == "w0011");
  BOOST_TEST(layout.cards[3].key == "w0001/cuda:1");
  BOOST_TEST(layout.cards[3].worker == 1u);
  BOOST_TEST(layout.first_card[11] == 22u);
  // The run queue's map of workers iterates in the same order.
  std::size_t i = 0;
  for (const auto& [name, w] : layout.workers) {
    BOOST_TEST(name == layout.worker_names[i++]);
    BOOST_TEST(w.open);
    BOOST_TEST(w.uuids.size() == 2u);
  }
}

BOOST_AUTO_TEST_SUITE_END()
