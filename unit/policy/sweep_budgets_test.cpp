// A sweep's budgets judged before anything is queued (issue 16): a budget no card holds, one that
// does not fit now beside the variants before it with target.wait false, and what is not refused.
#include <boost/test/unit_test.hpp>

#include "actors/policy/sweep_budgets.hpp"

using namespace cdui;
using namespace cdui::policy;

namespace {

constexpr std::int64_t gib = 1024LL * 1024 * 1024;
constexpr std::int64_t mib = 1024LL * 1024;

/// sim:0 on this server, shared by memory, `total` bytes of which `free` are free.
card_memory_status sim_card(std::int64_t total, std::int64_t free, std::vector<card_run_status> runs = {}) {
  card_memory_status c;
  c.key = "sim:0";
  c.offerers = {"sim:0"};
  c.name = "sim:0 on this server";
  c.reported = true;
  c.total = total;
  c.free = free;
  c.runs = std::move(runs);
  return c;
}

variant_budget on_sim0(std::int64_t budget, std::optional<bool> wait = std::nullopt) {
  variant_budget v;
  v.budget = budget;
  v.keys = {"sim:0"};
  v.wait = wait;
  return v;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sweep_budgets_test)

BOOST_AUTO_TEST_CASE(a_budget_no_card_holds_refuses_its_variant_whatever_target_wait_says) {
  std::vector<variant_budget> variants{on_sim0(512 * mib, true), on_sim0(2 * gib, true)};
  auto refused = first_refused_budget({sim_card(gib, gib)}, variants);
  BOOST_REQUIRE(refused);
  BOOST_TEST(refused->index == 1u);
  BOOST_TEST(refused->reason == "needs 2.0 GiB, more than sim:0 on this server has in all (1.0 GiB)");
}

BOOST_AUTO_TEST_CASE(without_wait_a_variant_that_does_not_fit_beside_the_ones_before_it_is_refused) {
  // 1 GiB: the first 0.4 GiB fits, then the second, and the third has 0.2 GiB left.
  std::vector<variant_budget> variants(3, on_sim0(400 * mib, false));
  auto refused = first_refused_budget({sim_card(gib, gib)}, variants);
  BOOST_REQUIRE(refused);
  BOOST_TEST(refused->index == 2u);
  BOOST_TEST(refused->reason.rfind("needs 0.4 GiB, sim:0 on this server has 0.2 GiB free (runs variant 0, variant 1)", 0) == 0u,
             refused->reason);
  // target.wait unset is false for a named card; true waits its turn instead.
  BOOST_TEST(first_refused_budget({sim_card(gib, gib)}, std::vector<variant_budget>(3, on_sim0(400 * mib))).has_value());
  BOOST_TEST(!first_refused_budget({sim_card(gib, gib)}, std::vector<variant_budget>(3, on_sim0(400 * mib, true))).has_value());
}

BOOST_AUTO_TEST_CASE(the_runs_on_the_card_now_count_and_a_run_without_a_budget_holds_it) {
  auto busy = sim_card(gib, gib, {{"a1b2c3d4", 800 * mib, true}});
  auto refused = first_refused_budget({busy}, {on_sim0(400 * mib, false)});
  BOOST_REQUIRE(refused);
  BOOST_TEST(refused->index == 0u);
  BOOST_TEST(refused->reason.find("runs a1b2c3d4") != std::string::npos, refused->reason);
  auto held = sim_card(gib, gib, {{"a1b2c3d4", 0, true}});
  refused = first_refused_budget({held}, {on_sim0(100 * mib, false)});
  BOOST_REQUIRE(refused);
  BOOST_TEST(refused->reason.find("held by run a1b2c3d4") != std::string::npos, refused->reason);
}

BOOST_AUTO_TEST_CASE(a_card_that_has_not_reported_and_keys_the_ledger_does_not_list_are_not_judged) {
  auto silent = sim_card(0, 0);
  silent.reported = false;
  BOOST_TEST(!first_refused_budget({silent}, {on_sim0(100 * gib, false)}).has_value());
  variant_budget elsewhere = on_sim0(100 * gib, false);
  elsewhere.keys = {"w1/sim:3"};
  BOOST_TEST(!first_refused_budget({sim_card(gib, gib)}, {elsewhere}).has_value());
}

BOOST_AUTO_TEST_CASE(a_variant_placed_later_is_refused_only_for_a_budget_larger_than_every_card_it_may_use) {
  variant_budget any;
  any.budget = 2 * gib;
  any.keys = {"sim:0"};
  any.any_of = true;
  any.wait = false;
  auto refused = first_refused_budget({sim_card(gib, gib)}, {any});
  BOOST_REQUIRE(refused);
  BOOST_TEST(refused->reason.find("larger than every card it may use") != std::string::npos, refused->reason);
  any.by_count_too = true;  // a card not shared may take it by count
  BOOST_TEST(!first_refused_budget({sim_card(gib, gib)}, {any}).has_value());
  any.by_count_too = false;
  any.budget = 600 * mib;  // fits the card in all; does not fit now: it waits for a free card
  BOOST_TEST(!first_refused_budget({sim_card(gib, 100 * mib)}, {any, any}).has_value());
}

BOOST_AUTO_TEST_CASE(a_card_two_offerers_share_is_one_ledger_for_both_keys) {
  auto card = sim_card(gib, gib);
  card.key = "w1/sim:0";
  card.offerers = {"w1/sim:0", "w2/sim:0"};
  card.name = "sim:0 on w1 (same card as sim:0 on w2)";
  auto first = on_sim0(600 * mib, false);
  first.keys = {"w1/sim:0"};
  auto second = on_sim0(600 * mib, false);
  second.keys = {"w2/sim:0"};
  auto refused = first_refused_budget({card}, {first, second});
  BOOST_REQUIRE(refused);
  BOOST_TEST(refused->index == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
