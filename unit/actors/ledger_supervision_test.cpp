// The memory ledger supervises its device slots (actors/server/memory_ledger.*): a slot that ends
// unexpectedly is replaced at once by a new one for its card, which takes over the runs that have
// a place there, so the card goes on judging budgets with them counted.
#include <boost/test/unit_test.hpp>

#include "testkit/wait.hpp"
#include "unit/actors/ledger_fixture.hpp"

using cdui::test::ledger_fixture;

namespace {

constexpr std::int64_t mib = 1024LL * 1024;

} // namespace

BOOST_AUTO_TEST_SUITE(ledger_supervision_test)

BOOST_FIXTURE_TEST_CASE(a_killed_slot_is_replaced_and_the_runs_on_its_card_still_count, ledger_fixture) {
  const std::string key = "w1/sim:0";
  auto report = [&] { self->send(ledger, cdui::atoms::report::value, key, 2048 * mib, 2048 * mib); };
  // A run on the card already when it turns shared, and one granted and started since.
  BOOST_TEST(share(key, key, true, {"held"}, {512 * mib}));
  report();
  BOOST_TEST(ask("a", 1024 * mib, key).kind == 0);
  self->send(ledger, cdui::atoms::started::value, std::string{"a"});
  BOOST_TEST(status().cards.at(0).running == 1536 * mib);

  auto first = slot(key);
  BOOST_REQUIRE(first);
  caf::anon_send_exit(first, caf::exit_reason::kill);
  BOOST_REQUIRE_MESSAGE(cdui::test::eventually([&] {
                          auto now = slot(key);
                          return now && now != first;
                        }),
                        "the killed slot was not replaced");
  report();  // the card's figures, at the worker's next heartbeat

  // The new slot counts both runs: 0.5 GiB is left, so 1 GiB more waits.
  auto card = status().cards.at(0);
  BOOST_TEST(card.running == 1536 * mib);
  BOOST_TEST(card.runs.size() == 2u);
  auto waits = ask("b", 1024 * mib, key);
  BOOST_TEST(waits.kind == 1);
  BOOST_TEST(waits.reason == "waits for memory: needs 1.0 GiB, sim:0 on w1 has 0.5 GiB free (runs a, held)");
  // And a run that ends there frees its budget on the new slot.
  self->send(ledger, cdui::atoms::released::value, std::string{"a"});
  BOOST_TEST(status().cards.at(0).running == 512 * mib);
  BOOST_TEST(ask("b", 1024 * mib, key).kind == 0);
}

BOOST_AUTO_TEST_SUITE_END()
