// Cards shared by memory on an embedded server (docs/http-api.md, "Cards shared by memory"): the
// run queue asks the memory ledger (actors/server/memory_ledger.*, device_slot.*) before a run
// starts on one; real runs on a sim card, real cdui.db.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <set>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/policy/run_options.hpp"
#include "actors/server/server.hpp"
#include "testkit/embedded.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"
#include "unit/actors/ledger_fixture.hpp"

using cdui::test::ledger_fixture;

using cdui::run_status;
using cdui::test::moons_graph_json;
using cdui::test::reaches;
using cdui::test::server_config;

namespace {

constexpr std::int64_t mib = 1024LL * 1024;

/// An endless run on sim:0 held to `budget` bytes; with `wait`, target.wait true.
cdui::run_request endless_with(std::int64_t budget, bool wait = false) {
  auto r = cdui::test::request(moons_graph_json(1'000'000, 0, 16, "sim:0"));
  r.memory_bytes = budget;
  r.has_wait = wait;
  r.wait = wait;
  return r;
}

/// A run of the moons graph with `hidden` units that leaves the device to the run's option.
cdui::run_request moons_on(const std::string& device, int epochs, int hidden = 16) {
  auto r = cdui::test::request(moons_graph_json(epochs, 0, hidden, std::nullopt));
  r.device = device;
  return r;
}

/// The messages of the run's run_warning events of `kind`.
std::vector<std::string> warnings(cdui::server& srv, const std::string& id, const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& e : srv.events(id, 0).value().events)
    if (e.type == "run_warning")
      if (auto data = nlohmann::json::parse(e.data); data["kind"] == kind)
        out.push_back(data["message"]);
  return out;
}

/// target.memory_gib and target.memory_source as the run's options have them now.
std::pair<double, std::string> budget_of(cdui::server& srv, const std::string& id) {
  auto target = nlohmann::json::parse(srv.info(id)->options)["target"];
  return {target.value("memory_gib", 0.0), target.value("memory_source", std::string{"typed"})};
}

std::string waiting_reason(cdui::server& srv, const std::string& id) {
  auto info = srv.info(id);
  return info ? info->waiting_reason : "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(memory_ledger_test)

BOOST_AUTO_TEST_CASE(a_shared_sim_card_runs_two_budgets_and_the_third_waits_for_memory) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "1x2GiB")};
  BOOST_TEST(srv.share_device("sim:0", true).has_value());

  // Without a budget a run may not go to a shared card.
  auto none = srv.submit(cdui::test::request(moons_graph_json(1, 2, 16, "sim:0")));
  BOOST_TEST(!none.ok());
  BOOST_TEST(none.error.rfind("option 'target.memory_gib': the card is shared by memory, so the run "
                              "needs a budget", 0) == 0u, none.error);

  auto a = srv.submit(endless_with(800 * mib));
  auto b = srv.submit(endless_with(800 * mib));
  BOOST_REQUIRE(a.ok() && b.ok());
  BOOST_TEST(reaches(srv, a.run_id, run_status::running));
  BOOST_TEST(reaches(srv, b.run_id, run_status::running));
  // A third does not fit now: refused at once, unless it may wait (target.wait).
  auto refused = srv.submit(endless_with(800 * mib));
  BOOST_REQUIRE(refused.ok());
  auto ended = srv.wait(refused.run_id);
  BOOST_TEST(to_string(ended.status) == "failed");
  BOOST_TEST(ended.error.rfind("needs 0.8 GiB, sim:0 on this server has 0.4 GiB free", 0) == 0u, ended.error);
  BOOST_TEST(ended.error.find("(with target.wait true it would wait in the queue until it fits)")
             != std::string::npos, ended.error);
  auto c = srv.submit(endless_with(800 * mib, true));
  BOOST_REQUIRE(c.ok());
  BOOST_TEST(cdui::test::eventually([&] { return waiting_reason(srv, c.run_id).rfind("waits for memory", 0) == 0; }));
  BOOST_TEST(waiting_reason(srv, c.run_id)
             == "waits for memory: needs 0.8 GiB, sim:0 on this server has 0.4 GiB free (runs "
                  + std::min(a.run_id, b.run_id) + ", " + std::max(a.run_id, b.run_id) + ")");
  BOOST_TEST(srv.info(c.run_id)->status == run_status::queued);

  // The ledger as GET /api/devices shows it: two budgets running on the card.
  auto memory = srv.memory();
  BOOST_REQUIRE(memory.cards.size() == 1u);
  const auto& card = memory.cards[0];
  BOOST_TEST(card.key == "sim:0");
  BOOST_TEST(card.total == 2048 * mib);
  BOOST_TEST(card.running == 1600 * mib);
  BOOST_TEST(card.may_take == 448 * mib);
  BOOST_TEST(card.runs.size() == 2u);

  // One ends: the waiting run starts, with no reason left.
  BOOST_TEST(srv.cancel(a.run_id));
  BOOST_TEST(reaches(srv, c.run_id, run_status::running));
  BOOST_TEST(waiting_reason(srv, c.run_id).empty());
  BOOST_TEST(srv.cancel(b.run_id));
  BOOST_TEST(srv.cancel(c.run_id));
  BOOST_TEST(reaches(srv, c.run_id, run_status::cancelled));
}

BOOST_AUTO_TEST_CASE(a_budget_larger_than_the_card_is_refused_and_the_share_mode_survives_a_restart) {
  cdui::test::temp_home home;
  {
    cdui::server srv{server_config(home.path(), "1x1GiB")};
    BOOST_TEST(srv.share_device("sim:0", true).has_value());
    BOOST_TEST(srv.share_device("sim:7", true).error().message == "this server has no device 'sim:7' (`cdui "
                                                   "status` lists its devices)");
    auto huge = srv.submit(endless_with(2048 * mib));
    BOOST_REQUIRE(huge.ok());
    auto ended = srv.wait(huge.run_id);
    BOOST_TEST(to_string(ended.status) == "failed");
    BOOST_TEST(ended.error == "needs 2.0 GiB, more than sim:0 on this server has in all (1.0 GiB)");
  }
  cdui::server again{server_config(home.path(), "1x1GiB")};
  auto memory = again.memory();
  BOOST_REQUIRE(memory.cards.size() == 1u);
  BOOST_TEST(memory.cards[0].key == "sim:0");
  // Back to Exclusive: a run without a budget goes there again, by count.
  BOOST_TEST(again.share_device("sim:0", false).has_value());
  BOOST_TEST(again.memory().cards.empty());
  auto plain = again.submit(cdui::test::request(moons_graph_json(1, 2, 16, "sim:0")));
  BOOST_REQUIRE(plain.ok());
  BOOST_TEST(to_string(again.wait(plain.run_id).status) == "succeeded");
}

BOOST_AUTO_TEST_CASE(a_graph_that_succeeded_once_gets_its_measured_peak_plus_20_percent_as_budget) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "1x1GiB")};
  BOOST_TEST(srv.share_device("sim:0", true).has_value());
  auto first = cdui::test::request(moons_graph_json(1, 2, 16, "sim:0"));
  first.memory_bytes = 64 * mib;
  auto typed = srv.submit(first);
  BOOST_REQUIRE(typed.ok());
  auto done = srv.wait(typed.run_id);
  BOOST_REQUIRE(to_string(done.status) == "succeeded");
  auto peak = nlohmann::json::parse(done.final_metrics)["loop"]["peak_memory_bytes"]["sim:0"].get<std::int64_t>();

  // The same graph as it executes (another seed, more epochs), with no budget: the measured default.
  auto again = cdui::test::request(moons_graph_json(2, 4, 16, "sim:0"));
  again.seed = 99;
  auto measured = srv.submit(again);
  BOOST_REQUIRE(measured.ok());
  auto ended = srv.wait(measured.run_id);
  BOOST_TEST(to_string(ended.status) == "succeeded", ended.error);
  auto target = nlohmann::json::parse(ended.options)["target"];
  BOOST_TEST(target["memory_source"] == "measured");
  auto budget = static_cast<std::int64_t>(target["memory_gib"].get<double>() * 1024 * 1024 * 1024);
  BOOST_TEST(budget == static_cast<std::int64_t>(std::ceil(peak * 1.2)));
  bool said = false;
  for (const auto& e : srv.events(measured.run_id, 0).value().events)
    if (e.type == "run_warning") {
      auto data = nlohmann::json::parse(e.data);
      said = said || (data["kind"] == "memory_budget"
                      && data["message"].get<std::string>().find("the peak of run " + typed.run_id)
                           != std::string::npos);
    }
  BOOST_TEST(said);

  // Another graph (wider) has no peak yet: still asked for a budget.
  auto other = srv.submit(cdui::test::request(moons_graph_json(1, 2, 32, "sim:0")));
  BOOST_TEST(!other.ok());
}

BOOST_FIXTURE_TEST_CASE(two_offerers_of_one_card_keep_one_ledger_until_neither_shares_it, ledger_fixture) {
  const std::string card = "uuid:SIM-card-A-0";
  BOOST_TEST(share("w1/sim:0", card, true));
  BOOST_TEST(!share("w1/sim:0", card, true));  // shared already: nothing changes
  // w2 offers the same card with a run on it already (its budget counts as running).
  BOOST_TEST(share("w2/sim:0", card, true, {"held"}, {512 * mib}));
  self->send(ledger, cdui::atoms::report::value, std::string{"w2/sim:0"}, 2048 * mib, 2048 * mib);
  auto memory = status();
  BOOST_REQUIRE(memory.cards.size() == 1u);
  BOOST_TEST(memory.cards[0].key == "w1/sim:0");
  BOOST_TEST((memory.cards[0].offerers == std::vector<std::string>{"w1/sim:0", "w2/sim:0"}));
  BOOST_TEST(memory.cards[0].name == "sim:0 on w1 (same card as sim:0 on w2)");
  BOOST_TEST(memory.cards[0].running == 512 * mib);
  freed();  // the first figures

  // Through either key, the runs count on the one ledger.
  BOOST_TEST(ask("a", 1024 * mib, "w1/sim:0").kind == 0);
  auto waits = ask("b", 1024 * mib, "w2/sim:0");
  BOOST_TEST(waits.kind == 1);
  BOOST_TEST(waits.reason == "waits for memory: needs 1.0 GiB, sim:0 on w1 (same card as sim:0 on w2) "
                             "has 0.5 GiB free (runs a, held)");
  // Room on the card is room at each key that shares it.
  self->send(ledger, cdui::atoms::released::value, std::string{"held"});
  status();
  BOOST_TEST((freed() == std::multiset<std::string>{"w1/sim:0", "w2/sim:0"}));

  // w1 turns Exclusive: the ledger goes on for w2, and run a (through w1) still counts on it.
  BOOST_TEST(share("w1/sim:0", card, false));
  memory = status();
  BOOST_REQUIRE(memory.cards.size() == 1u);
  BOOST_TEST(memory.cards[0].key == "w2/sim:0");
  BOOST_TEST((memory.cards[0].offerers == std::vector<std::string>{"w2/sim:0"}));
  BOOST_TEST(memory.cards[0].name == "sim:0 on w2");
  BOOST_REQUIRE(memory.cards[0].runs.size() == 1u);
  BOOST_TEST(memory.cards[0].runs[0].id == "a");
  BOOST_TEST(ask("c", 1024 * mib, "w1/sim:0").kind == 2);  // w1 is not shared by memory
  self->send(ledger, cdui::atoms::released::value, std::string{"a"});
  status();
  BOOST_TEST((freed() == std::multiset<std::string>{"w2/sim:0"}));
  BOOST_TEST(status().cards[0].runs.empty());

  // Neither shares it: its slot ends.
  BOOST_TEST(share("w2/sim:0", card, false));
  BOOST_TEST(!share("w2/sim:0", card, false));
  BOOST_TEST(status().cards.empty());
}

BOOST_FIXTURE_TEST_CASE(a_measured_cuda_context_is_counted_from_then_on_and_frees_room_when_smaller, ledger_fixture) {
  const std::string key = "gpu-box/cuda:0";
  const std::string card = "uuid:GPU-1a2b3c4d";
  bool changed = false;
  self->request(ledger, std::chrono::seconds(5), cdui::atoms::share::value,
                cdui::card_share{key, card, "cuda:0 on gpu-box", 768 * mib, "", {}, {}, true})
    .receive([&](bool c) { changed = c; }, [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
  BOOST_TEST(changed);
  self->send(ledger, cdui::atoms::report::value, key, 16384 * mib, 16384 * mib);
  status();
  freed();
  BOOST_TEST(ask("a", 7168 * mib, key).kind == 0);
  auto waits = ask("b", 7936 * mib, key);  // 7 + 0.75 + 7.75 + 0.75 GiB: 16.25 GiB
  BOOST_TEST(waits.kind == 1);
  BOOST_TEST(waits.reason.find("needs 7.8 GiB (+0.8 GiB CUDA context)") != std::string::npos, waits.reason);
  // Run a measured the context at 512 MiB: both runs count it, so b fits, and the queue is told.
  self->send(ledger, cdui::atoms::context::value, card, 512 * mib, std::string{"CUDA context, measured by run a"});
  auto memory = status();
  BOOST_REQUIRE(memory.cards.size() == 1u);
  BOOST_TEST(memory.cards[0].context == 512 * mib);
  BOOST_TEST(memory.cards[0].reserved == 7168 * mib + 512 * mib);  // granted, not started yet
  BOOST_TEST((freed() == std::multiset<std::string>{key}));
  BOOST_TEST(ask("b", 7936 * mib, key).kind == 0);
  // A larger one later counts as it is, named so, and frees nothing.
  self->send(ledger, cdui::atoms::context::value, card, 640 * mib, std::string{"CUDA context, measured by run b"});
  status();
  BOOST_TEST(freed().empty());
  auto more = ask("c", 512 * mib, key);
  BOOST_TEST(more.kind == 1);
  BOOST_TEST(more.reason.find("(+0.6 GiB CUDA context, measured by run b)") != std::string::npos, more.reason);
}

BOOST_AUTO_TEST_CASE(runs_for_any_card_wait_for_one_with_room_and_are_refused_when_none_can_hold_them) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "1x2GiB")};
  BOOST_TEST(srv.share_device("sim:0", true).has_value());
  auto any = [](std::int64_t budget, std::optional<bool> wait = std::nullopt) {
    auto r = endless_with(budget);
    r.worker = cdui::policy::any_worker;
    r.device = "sim";
    r.has_wait = wait.has_value();
    r.wait = wait.value_or(false);
    return r;
  };
  auto a = srv.submit(any(800 * mib));
  auto b = srv.submit(any(800 * mib));
  BOOST_REQUIRE(a.ok() && b.ok());
  BOOST_TEST(reaches(srv, a.run_id, run_status::running));
  BOOST_TEST(reaches(srv, b.run_id, run_status::running));
  BOOST_TEST(srv.info(a.run_id)->queue_key == "sim:0");
  // No card has room now: a run for any waits (target.wait unset) ...
  auto c = srv.submit(any(800 * mib));
  BOOST_REQUIRE(c.ok());
  BOOST_TEST(cdui::test::eventually([&] { return waiting_reason(srv, c.run_id).rfind("waits for memory", 0) == 0; }));
  BOOST_TEST(waiting_reason(srv, c.run_id)
             == "waits for memory: needs 0.8 GiB, sim:0 on this server has 0.4 GiB free (runs "
                  + std::min(a.run_id, b.run_id) + ", " + std::max(a.run_id, b.run_id) + ")");
  BOOST_TEST(srv.info(c.run_id)->queue_key == "any");
  // ... unless target.wait is false, or its budget is larger than every card it may use.
  auto impatient = srv.submit(any(800 * mib, false));
  BOOST_REQUIRE(impatient.ok());
  auto refused = srv.wait(impatient.run_id);
  BOOST_TEST(to_string(refused.status) == "failed");
  BOOST_TEST(refused.error == "needs 0.8 GiB, sim:0 on this server has 0.4 GiB free (runs "
                                + std::min(a.run_id, b.run_id) + ", " + std::max(a.run_id, b.run_id)
                                + ") (target.wait is false, so it does not wait)");
  auto huge = srv.submit(any(3072 * mib, true));
  BOOST_REQUIRE(huge.ok());
  auto never = srv.wait(huge.run_id);
  BOOST_TEST(to_string(never.status) == "failed");
  BOOST_TEST(never.error == "its budget is larger than every card it may use: needs 3.0 GiB, more "
                            "than sim:0 on this server has in all (2.0 GiB)");
  // Room again: the waiting run takes the card.
  BOOST_TEST(srv.cancel(a.run_id));
  BOOST_TEST(reaches(srv, c.run_id, run_status::running));
  BOOST_TEST(srv.info(c.run_id)->queue_key == "sim:0");
  BOOST_TEST(waiting_reason(srv, c.run_id).empty());
  BOOST_TEST(srv.memory().cards.at(0).runs.size() == 2u);
  for (const auto& id : {b.run_id, c.run_id})
    BOOST_TEST(srv.cancel(id));
  BOOST_TEST(reaches(srv, c.run_id, run_status::cancelled));
}

BOOST_AUTO_TEST_CASE(a_larger_peak_raises_a_waiting_estimate_and_gives_a_run_queued_before_sharing_its_default) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "2x1GiB")};
  // sim:0 is held by an endless run without a budget, with a run of another graph queued behind it.
  auto holder = srv.submit(moons_on("sim:0", 1'000'000, 8));
  BOOST_REQUIRE(holder.ok());
  BOOST_TEST(reaches(srv, holder.run_id, run_status::running));
  auto behind = srv.submit(moons_on("sim:0", 1));
  BOOST_REQUIRE(behind.ok());
  // Shared now: the holder keeps the card; the run behind has no budget and no peak to go by.
  BOOST_TEST(srv.share_device("sim:0", true).has_value());
  BOOST_TEST(cdui::test::eventually([&] {
    return waiting_reason(srv, behind.run_id).rfind("waits for a budget", 0) == 0;
  }));
  BOOST_TEST(waiting_reason(srv, behind.run_id).rfind("waits for a budget: its card turned shared", 0) == 0u,
             waiting_reason(srv, behind.run_id));
  // An estimate of the same graph, far below what it takes, queues behind it.
  auto low = moons_on("sim:0", 1);
  low.memory_bytes = 1024;  // its peak is some KiB
  low.memory_source = "estimate";
  low.has_wait = low.wait = true;
  auto estimated = srv.submit(low);
  BOOST_REQUIRE(estimated.ok());

  // The same graph succeeds on sim:1: its peak gives the first its default and raises the second.
  auto done = srv.wait(srv.submit(moons_on("sim:1", 1)).run_id);
  BOOST_REQUIRE(to_string(done.status) == "succeeded");
  auto peak = nlohmann::json::parse(done.final_metrics)["loop"]["peak_memory_bytes"]["sim:1"].get<std::int64_t>();
  auto expected = static_cast<double>(static_cast<std::int64_t>(std::ceil(peak * 1.2))) / (1024.0 * mib);
  BOOST_TEST(cdui::test::eventually([&] { return budget_of(srv, behind.run_id).second == "measured"; }));
  BOOST_TEST(budget_of(srv, behind.run_id).first == expected, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(cdui::test::eventually([&] { return budget_of(srv, estimated.run_id).first > 1024 / (1024.0 * mib); }));
  BOOST_TEST(budget_of(srv, estimated.run_id).first == expected, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(budget_of(srv, estimated.run_id).second == "estimate");
  auto said = warnings(srv, estimated.run_id, "memory_budget");
  BOOST_REQUIRE(!said.empty());
  BOOST_TEST(said.back().find("raised from an estimate of 0.0 GiB to the peak of run " + done.id)
             != std::string::npos, said.back());
  // Both still wait for the holder, the first now judged by its budget; both run once it ends.
  BOOST_TEST(cdui::test::eventually([&] {
    return waiting_reason(srv, behind.run_id).rfind("waits for memory", 0) == 0;
  }), waiting_reason(srv, behind.run_id));
  // Its reason says where the budget it was given comes from.
  BOOST_TEST(waiting_reason(srv, behind.run_id).find("is the peak of run " + done.id) != std::string::npos,
             waiting_reason(srv, behind.run_id));
  BOOST_TEST(srv.cancel(holder.run_id));
  BOOST_TEST(to_string(srv.wait(behind.run_id).status) == "succeeded");
  BOOST_TEST(to_string(srv.wait(estimated.run_id).status) == "succeeded");
}

BOOST_AUTO_TEST_SUITE_END()
