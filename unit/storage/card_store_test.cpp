// The store's cards: their share mode, the peaks that give a graph's runs their default budget,
// and the CUDA context runs measured on each card (storage/card_store.cpp).
#include <boost/test/unit_test.hpp>

#include "storage/run_store.hpp"
#include "testkit/home.hpp"

BOOST_AUTO_TEST_SUITE(card_store_test)

BOOST_AUTO_TEST_CASE(a_cards_share_mode_survives_the_store_and_exclusive_is_the_default) {
  cdui::test::temp_home home;
  {
    cdui::storage::run_store store{home.path() / "cdui.db"};
    BOOST_TEST(store.shared_cards().empty());
    store.set_shared("", "sim:0", true, 100);
    store.set_shared("gpu-box", "cuda:1", true, 200);
    store.set_shared("gpu-box", "cuda:1", true, 300);  // again: one row, the latest time
    store.set_shared("", "cpu", true, 400);
    store.set_shared("", "cpu", false, 500);
  }
  cdui::storage::run_store store{home.path() / "cdui.db"};
  auto cards = store.shared_cards();
  BOOST_REQUIRE(cards.size() == 2u);
  BOOST_TEST(cards[0].offerer.empty());
  BOOST_TEST(cards[0].device == "sim:0");
  BOOST_TEST(cards[1].offerer == "gpu-box");
  BOOST_TEST(cards[1].shared_ms == 300);
}

BOOST_AUTO_TEST_CASE(a_graphs_last_measured_peak_is_kept_per_number_of_cards) {
  cdui::test::temp_home home;
  {
    cdui::storage::run_store store{home.path() / "cdui.db"};
    BOOST_TEST(!store.peak("key-a", 1).has_value());
    store.put_peak("key-a", 1, {1000, "run00001", 10});
    store.put_peak("key-a", 2, {700, "run00002", 20});
    store.put_peak("key-a", 1, {900, "run00003", 30});  // the last succeeded run's, even if smaller
  }
  cdui::storage::run_store store{home.path() / "cdui.db"};
  auto one = store.peak("key-a", 1);
  BOOST_REQUIRE(one.has_value());
  BOOST_TEST(one->bytes == 900);
  BOOST_TEST(one->run_id == "run00003");
  BOOST_TEST(store.peak("key-a", 2)->bytes == 700);
  BOOST_TEST(!store.peak("key-b", 1).has_value());
}

BOOST_AUTO_TEST_CASE(a_cards_measured_context_survives_the_store) {
  cdui::test::temp_home home;
  const std::string h100 = "GPU-1a2b3c4d-0000-1111-2222-333344445555";
  {
    cdui::storage::run_store store{home.path() / "cdui.db"};
    BOOST_TEST(!store.context(h100).has_value());
    store.put_context(h100, {540LL << 20, "run00001", 0, "", 10});
    store.put_context("gpu-box/cuda:1", {0, "", 600LL << 20, "run00002", 20});
    store.put_context(h100, {560LL << 20, "run00003", 500LL << 20, "run00001", 30});  // replaces the row
  }
  cdui::storage::run_store store{home.path() / "cdui.db"};
  auto measured = store.context(h100);
  BOOST_REQUIRE(measured.has_value());
  BOOST_TEST(measured->held_bytes == 560LL << 20);
  BOOST_TEST(measured->held_run == "run00003");
  BOOST_TEST(measured->created_bytes == 500LL << 20);
  BOOST_TEST(measured->created_run == "run00001");
  BOOST_TEST(measured->measured_ms == 30);
  BOOST_TEST(store.context("gpu-box/cuda:1")->created_bytes == 600LL << 20);
  BOOST_TEST(store.context("gpu-box/cuda:1")->held_bytes == 0);
  BOOST_TEST(!store.context("GPU-other").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
