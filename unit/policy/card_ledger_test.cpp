// One card's memory ledger and the run-level decision over candidate cards (docs/http-api.md,
// "Cards shared by memory"): the fit formula, every refusal and wait text, target.wait, budgets and
// their raising.
#include <boost/test/unit_test.hpp>

#include "actors/policy/card_ledger.hpp"
#include "actors/policy/memory_budget.hpp"

using namespace cdui::policy;

namespace {

constexpr std::int64_t gib = 1024LL * 1024 * 1024;
constexpr std::int64_t mib = 1024LL * 1024;

card_ledger cuda_card(std::int64_t total, std::int64_t free, const std::string& name = "cuda:1 on gpu-box") {
  card_ledger c{{name, 768 * mib, "CUDA context"}};
  c.report(total, free);
  return c;
}

card_ledger sim_card(std::int64_t total, std::int64_t free, const std::string& name = "sim:0 on w1") {
  card_ledger c{{name, 0, "context"}};
  c.report(total, free);
  return c;
}

memory_decision::kind kind_of(const memory_decision& d) { return d.answer; }

} // namespace

BOOST_AUTO_TEST_SUITE(card_ledger_test)

BOOST_AUTO_TEST_CASE(a_run_fits_when_budget_and_context_are_at_most_the_smaller_of_free_and_unreserved) {
  auto c = cuda_card(16 * gib, 16 * gib);
  // 16 GiB card: 15.25 GiB + 0.75 GiB context fits exactly; one byte more does not.
  BOOST_TEST((c.judge(16 * gib - 768 * mib).answer == card_ledger::fit::fits));
  BOOST_TEST((c.judge(16 * gib - 768 * mib + 1).answer == card_ledger::fit::never));

  // Reserved and running budgets count with their context, against total and free both.
  c.reserve("a1b2c3d4", 4 * gib);
  BOOST_TEST(c.reserved() == 4 * gib + 768 * mib);
  BOOST_TEST(c.available() == 16 * gib - (4 * gib + 768 * mib));
  c.start("a1b2c3d4");
  BOOST_TEST(c.reserved() == 0);
  BOOST_TEST(c.running() == 4 * gib + 768 * mib);
  // The heartbeat has not seen its memory yet: total - running decides.
  BOOST_TEST(c.available() == 16 * gib - (4 * gib + 768 * mib));
  // Another user's job took 10 GiB: free decides.
  c.report(16 * gib, 6 * gib);
  BOOST_TEST(c.available() == 6 * gib);
  BOOST_TEST(c.may_take() == 6 * gib - 768 * mib);
  BOOST_TEST((c.judge(5 * gib + 512 * mib).answer == card_ledger::fit::waits));
  BOOST_TEST((c.judge(5 * gib + 256 * mib).answer == card_ledger::fit::fits));
}

BOOST_AUTO_TEST_CASE(a_measured_context_replaces_the_allowance_for_every_run_on_the_card) {
  auto c = cuda_card(16 * gib, 16 * gib);
  c.reserve("a1b2c3d4", 7 * gib);
  c.start("a1b2c3d4");
  // 7 GiB + 0.75 GiB left 8.25 GiB: a run of 7.75 GiB waits with the allowance...
  auto v = c.judge(7 * gib + 768 * mib);
  BOOST_TEST((v.answer == card_ledger::fit::waits));
  BOOST_TEST(v.reason.find("(+0.8 GiB CUDA context)") != std::string::npos, v.reason);
  // ...and fits once a run measured the context at 512 MiB: the running run counts it too.
  c.set_context(512 * mib, "CUDA context, measured by run e5f6a7b8");
  BOOST_TEST(c.running() == 7 * gib + 512 * mib);
  BOOST_TEST(c.may_take() == 16 * gib - (7 * gib + 512 * mib) - 512 * mib);
  BOOST_TEST((c.judge(7 * gib + 768 * mib).answer == card_ledger::fit::fits));
  auto big = c.judge(9 * gib);
  BOOST_TEST((big.answer == card_ledger::fit::waits));
  BOOST_TEST(big.reason.find("needs 9.0 GiB (+0.5 GiB CUDA context, measured by run e5f6a7b8)") == 0u, big.reason);
}

BOOST_AUTO_TEST_CASE(without_a_context_allowance_the_budget_alone_counts_and_the_text_has_no_context) {
  auto c = sim_card(2 * gib, 2 * gib);
  c.reserve("r1", 800 * mib);
  c.start("r1");
  c.reserve("r2", 800 * mib);
  auto third = c.judge(800 * mib);
  BOOST_TEST((third.answer == card_ledger::fit::waits));
  BOOST_TEST(third.reason == "needs 0.8 GiB, sim:0 on w1 has 0.4 GiB free (runs r1, r2)");
  BOOST_TEST(c.release("r1"));
  BOOST_TEST(!c.release("r1"));
  BOOST_TEST((c.judge(800 * mib).answer == card_ledger::fit::fits));
}

BOOST_AUTO_TEST_CASE(a_card_several_offerers_share_is_named_by_the_first_and_the_same_card_as_the_others) {
  BOOST_TEST(card_name({"sim:0 on w1"}) == "sim:0 on w1");
  BOOST_TEST(card_name({"sim:0 on w1", "sim:0 on w2"}) == "sim:0 on w1 (same card as sim:0 on w2)");
  BOOST_TEST(card_name({"cuda:0 on this server", "cuda:0 on box", "cuda:1 on box2"})
             == "cuda:0 on this server (same card as cuda:0 on box, cuda:1 on box2)");
  // Renamed, its texts say so.
  auto c = sim_card(2 * gib, 2 * gib);
  c.rename(card_name({"sim:0 on w1", "sim:0 on w2"}));
  c.reserve("r1", 1600 * mib);
  BOOST_TEST(c.judge(800 * mib).reason
             == "needs 0.8 GiB, sim:0 on w1 (same card as sim:0 on w2) has 0.4 GiB free (runs r1)");
}

BOOST_AUTO_TEST_CASE(the_wait_and_refusal_texts_name_both_numbers_in_the_seeds_words) {
  auto c = cuda_card(24 * gib, 24 * gib);
  c.reserve("a1b2c3d4", 5 * gib);
  c.start("a1b2c3d4");
  c.reserve("c3d4e5f6", 4 * gib);
  // Free, as the heartbeat saw it, less the reserved run: 6.3 GiB.
  c.report(24 * gib, 11 * gib + 52 * mib);
  auto v = c.judge(6 * gib);
  BOOST_TEST((v.answer == card_ledger::fit::waits));
  BOOST_TEST(v.reason == "needs 6.0 GiB (+0.8 GiB CUDA context), cuda:1 on gpu-box has 6.3 GiB free "
                        "(runs a1b2c3d4, c3d4e5f6)");
  auto huge = c.judge(30 * gib);
  BOOST_TEST((huge.answer == card_ledger::fit::never));
  BOOST_TEST(huge.reason == "needs 30.0 GiB (+0.8 GiB CUDA context), more than cuda:1 on gpu-box has "
                           "in all (24.0 GiB)");
  card_ledger silent{{"cuda:0 on gpu-box", 768 * mib, "CUDA context"}};
  auto unknown = silent.judge(gib);
  BOOST_TEST((unknown.answer == card_ledger::fit::pending));
  BOOST_TEST(unknown.reason == "needs 1.0 GiB (+0.8 GiB CUDA context), cuda:0 on gpu-box has not "
                               "reported its memory yet; the budget is judged at its next heartbeat");
}

BOOST_AUTO_TEST_CASE(a_run_without_a_budget_keeps_the_card_to_itself_until_it_ends) {
  auto c = sim_card(8 * gib, 8 * gib);
  c.hold("0badc0de");
  auto v = c.judge(gib);
  BOOST_TEST((v.answer == card_ledger::fit::waits));
  BOOST_TEST(v.reason == "sim:0 on w1 is held by run 0badc0de, which has no budget and keeps the card "
                         "to itself until it ends");
  BOOST_TEST(c.running() == 0);  // it has no budget to count
  c.release("0badc0de");
  BOOST_TEST((c.judge(gib).answer == card_ledger::fit::fits));
}

BOOST_AUTO_TEST_CASE(a_run_for_a_named_worker_is_refused_at_once_unless_it_may_wait) {
  auto c = sim_card(2 * gib, 2 * gib);
  c.reserve("r1", 1536 * mib);
  std::vector<const card_ledger*> cards{&c};
  auto refused = decide(cards, {gib, std::nullopt, false});
  BOOST_TEST((kind_of(refused) == memory_decision::kind::refuse));
  BOOST_TEST(refused.reason == "needs 1.0 GiB, sim:0 on w1 has 0.5 GiB free (runs r1) (with "
                               "target.wait true it would wait in the queue until it fits)");
  auto waits = decide(cards, {gib, true, false});
  BOOST_TEST((kind_of(waits) == memory_decision::kind::wait));
  BOOST_TEST(waits.reason == "waits for memory: needs 1.0 GiB, sim:0 on w1 has 0.5 GiB free (runs r1)");
  // More than the card has: refused even when it may wait.
  auto never = decide(cards, {3 * gib, true, false});
  BOOST_TEST((kind_of(never) == memory_decision::kind::refuse));
  BOOST_TEST(never.reason == "needs 3.0 GiB, more than sim:0 on w1 has in all (2.0 GiB)");
  // A card not reported yet: it waits for the heartbeat, whatever target.wait says.
  card_ledger silent{{"sim:1 on w1", 0, "context"}};
  BOOST_TEST((kind_of(decide({&silent}, {gib, false, false})) == memory_decision::kind::wait));
}

BOOST_AUTO_TEST_CASE(a_device_set_needs_every_card_to_fit) {
  auto a = sim_card(4 * gib, 4 * gib, "sim:0 on w1");
  auto b = sim_card(4 * gib, gib, "sim:1 on w1");
  auto d = decide({&a, &b}, {2 * gib, true, false});
  BOOST_TEST((kind_of(d) == memory_decision::kind::wait));
  BOOST_TEST(d.reason == "waits for memory: needs 2.0 GiB, sim:1 on w1 has 1.0 GiB free");
  b.report(4 * gib, 4 * gib);
  auto granted = decide({&a, &b}, {2 * gib, true, false});
  BOOST_TEST((kind_of(granted) == memory_decision::kind::grant));
  BOOST_TEST(granted.cards == (std::vector<std::size_t>{0, 1}));
}

BOOST_AUTO_TEST_CASE(a_run_for_any_takes_the_first_card_with_room_waits_or_is_refused) {
  auto full = sim_card(2 * gib, 2 * gib, "sim:0 on w1");
  full.reserve("r1", 2 * gib);
  auto small = sim_card(gib, gib, "sim:0 on w2");
  auto roomy = sim_card(8 * gib, 8 * gib, "sim:0 on w3");
  auto granted = decide({&full, &small, &roomy}, {1536 * mib, std::nullopt, true});
  BOOST_TEST((kind_of(granted) == memory_decision::kind::grant));
  BOOST_TEST(granted.cards == (std::vector<std::size_t>{2}));

  // Nothing has room now: it waits by default, is refused with target.wait false.
  auto waits = decide({&full, &small}, {1536 * mib, std::nullopt, true});
  BOOST_TEST((kind_of(waits) == memory_decision::kind::wait));
  BOOST_TEST(waits.reason == "waits for memory: needs 1.5 GiB, sim:0 on w1 has 0.0 GiB free (runs r1)");
  auto refused = decide({&full, &small}, {1536 * mib, false, true});
  BOOST_TEST((kind_of(refused) == memory_decision::kind::refuse));
  BOOST_TEST(refused.reason == "needs 1.5 GiB, sim:0 on w1 has 0.0 GiB free (runs r1) (target.wait is "
                               "false, so it does not wait)");
  // Larger than every candidate: refused, with each card's figure.
  auto never = decide({&full, &small}, {4 * gib, true, true});
  BOOST_TEST((kind_of(never) == memory_decision::kind::refuse));
  BOOST_TEST(never.reason == "its budget is larger than every card it may use: needs 4.0 GiB, more "
                             "than sim:0 on w1 has in all (2.0 GiB); needs 4.0 GiB, more than sim:0 on "
                             "w2 has in all (1.0 GiB)");
  BOOST_TEST((kind_of(decide({}, {gib, true, true})) == memory_decision::kind::refuse));
}

BOOST_AUTO_TEST_CASE(a_run_for_any_judged_on_the_idle_cards_waits_for_a_busy_one_that_may_hold_it) {
  // The ledger judges the idle shared cards as if the run may wait; place_later() finishes.
  auto full = sim_card(2 * gib, 2 * gib, "sim:0 on w1");
  full.reserve("r1", 2 * gib);
  auto small = sim_card(gib, gib, "sim:0 on w2");
  auto waits = decide({&full}, {1536 * mib, true, true});
  auto never = decide({&small}, {1536 * mib, true, true});
  using kind = memory_decision::kind;
  // No other card: as decide() says for the run itself.
  BOOST_TEST((kind_of(place_later(waits, false, std::nullopt)) == kind::wait));
  auto no_wait = place_later(waits, false, false);
  BOOST_TEST((kind_of(no_wait) == kind::refuse));
  BOOST_TEST(no_wait.reason == decide({&full}, {1536 * mib, false, true}).reason);
  BOOST_TEST(place_later(never, false, true).reason == never.reason);
  BOOST_TEST((kind_of(place_later(never, false, true)) == kind::refuse));
  // Another card it may use is busy now: it waits for that one, whatever target.wait says.
  BOOST_TEST((kind_of(place_later(waits, true, false)) == kind::wait));
  auto later = place_later(never, true, false);
  BOOST_TEST((kind_of(later) == kind::wait));
  BOOST_TEST(later.reason == "waits for a card that is busy now: the free ones are too small (needs "
                             "1.5 GiB, more than sim:0 on w2 has in all (1.0 GiB))");
  auto granted = decide({&small}, {512 * mib, false, true});
  BOOST_TEST((kind_of(place_later(granted, true, false)) == kind::grant));
}

BOOST_AUTO_TEST_CASE(a_budget_is_typed_or_measured_and_without_either_the_run_is_asked_for_one) {
  auto typed = resolve_budget(6 * gib, budget_source::typed, measured_peak{8 * gib, "a1b2c3d4"});
  BOOST_REQUIRE(std::holds_alternative<run_budget>(typed));
  BOOST_TEST(std::get<run_budget>(typed).bytes == 6 * gib);  // a typed budget is never changed
  BOOST_TEST((std::get<run_budget>(typed).source == budget_source::typed));

  auto measured = resolve_budget(std::nullopt, budget_source::typed, measured_peak{gib, "a1b2c3d4"});
  BOOST_REQUIRE(std::holds_alternative<run_budget>(measured));
  const auto& m = std::get<run_budget>(measured);
  BOOST_TEST(m.bytes == static_cast<std::int64_t>(1.2 * gib) + 1);
  BOOST_TEST((m.source == budget_source::measured));
  BOOST_TEST(m.note == "the peak of run a1b2c3d4 (1.0 GiB) + 20%");

  auto none = resolve_budget(std::nullopt, budget_source::typed, std::nullopt);
  BOOST_REQUIRE(std::holds_alternative<std::string>(none));
  BOOST_TEST(std::get<std::string>(none).find("set target.memory_gib") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_estimate_below_a_measured_peak_gets_the_peak_and_waiting_budgets_are_raised) {
  measured_peak peak{2 * gib, "a1b2c3d4"};
  auto low = resolve_budget(gib, budget_source::estimate, peak);
  const auto& b = std::get<run_budget>(low);
  BOOST_TEST(b.bytes > 2 * gib);
  BOOST_TEST((b.source == budget_source::estimate));
  BOOST_TEST(b.note == "raised from an estimate of 1.0 GiB to the peak of run a1b2c3d4 (2.0 GiB) + 20%");
  auto high = std::get<run_budget>(resolve_budget(4 * gib, budget_source::estimate, peak));
  BOOST_TEST(high.bytes == 4 * gib);
  BOOST_TEST(high.note.empty());

  // A run of the same graph succeeded with a larger peak: measured and estimated budgets rise.
  run_budget measured{gib, budget_source::measured, "the peak of run 00000001 (0.8 GiB) + 20%"};
  auto raised = raise_budget(measured, {3 * gib, "0000beef"});
  BOOST_REQUIRE(raised.has_value());
  BOOST_TEST(raised->note == "raised from a measured budget of 1.0 GiB to the peak of run 0000beef "
                             "(3.0 GiB) + 20%");
  BOOST_TEST(!raise_budget(measured, {gib / 2, "0000beef"}).has_value());  // never lowered
  BOOST_TEST(!raise_budget({gib, budget_source::typed, ""}, {3 * gib, "0000beef"}).has_value());
}

BOOST_AUTO_TEST_CASE(which_cards_may_be_shared_by_memory) {
  BOOST_TEST(sharing_refusal(true, "sim:0").empty());
  BOOST_TEST(sharing_refusal(true, "cpu").empty());
  BOOST_TEST(sharing_refusal(true, "cuda:0").rfind("this server's CUDA cards admit runs by count only", 0) == 0u);
  BOOST_TEST(sharing_refusal(true, "tpu:0") == "this server has no device 'tpu:0' that can be shared");
  for (const auto* card : {"cuda:1", "sim:0", "mps:0"})
    BOOST_TEST(sharing_refusal(false, card).empty(), card);
  BOOST_TEST(sharing_refusal(false, "cpu") == "only a worker's cards (cuda, mps, sim) can be shared by "
                                              "memory, not 'cpu'");
}

BOOST_AUTO_TEST_CASE(a_shared_mps_card_refuses_every_budget_until_it_is_exclusive_again) {
  BOOST_TEST(budget_refusal("cuda:0").empty());
  BOOST_TEST(budget_refusal("sim:1").empty());
  card_ledger mps{{"mps:0 on mac-box", 0, "context", budget_refusal("mps:0")}};
  mps.report(0, 0);  // no total to go by
  auto verdict = mps.judge(gib);
  BOOST_TEST((verdict.answer == card_ledger::fit::never));
  BOOST_TEST(verdict.reason == "needs 1.0 GiB, but mps:0 on mac-box is an MPS card, which reports no "
                               "memory total, so it cannot admit a run by budget; set it back to "
                               "Exclusive (cdui workers exclusive) to run there by count");
  // Not even before a heartbeat: the answer does not depend on one.
  card_ledger fresh{{"mps:0 on mac-box", 0, "context", budget_refusal("mps:0")}};
  BOOST_TEST((fresh.judge(gib).answer == card_ledger::fit::never));
  // A run for a named worker is refused at once, whatever target.wait says.
  BOOST_TEST((kind_of(decide({&fresh}, {gib, true, false})) == memory_decision::kind::refuse));
}

BOOST_AUTO_TEST_SUITE_END()
