// Cards shared by memory on an embedded server (seed 001, "Sharing a card"): the run queue asks
// the memory ledger (actors/server/memory_ledger.*, device_slot.*) before a run starts on one; real
// runs on a sim card, real cdui.db.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <set>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/server/memory_ledger.hpp"
#include "actors/server/server.hpp"
#include "testkit/embedded.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"

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

std::string waiting_reason(cdui::server& srv, const std::string& id) {
  auto info = srv.info(id);
  return info ? info->waiting_reason : "";
}

/// The memory ledger actor alone, with a scoped actor standing in for its run queue.
struct ledger_fixture {
  ledger_fixture() {
    cfg.set("scheduler.max-threads", std::size_t{2});
    cfg.set("logger.verbosity", caf::atom("quiet"));
    self->send(ledger, cdui::atoms::attach::value, caf::actor_cast<cdui::actors::run_queue_actor>(queue));
  }
  ~ledger_fixture() { caf::anon_send_exit(ledger, caf::exit_reason::user_shutdown); }

  /// (share, key, card, name, ...): what the run queue sends when `key` turns Shared or back.
  bool share(const std::string& key, const std::string& card, bool shared,
             std::vector<std::string> holders = {}, std::vector<std::int64_t> budgets = {}) {
    auto at = key.find('/');
    auto name = key.substr(at + 1) + " on " + key.substr(0, at);
    bool changed = false;
    self->request(ledger, std::chrono::seconds(5), cdui::atoms::share::value, key, card, name,
                  std::int64_t{0}, holders, budgets, shared)
      .receive([&](bool c) { changed = c; }, [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
    return changed;
  }

  /// A run for `key` alone, with target.wait true.
  cdui::memory_answer ask(const std::string& run, std::int64_t budget, const std::string& key) {
    cdui::memory_answer answer;
    self->request(ledger, std::chrono::seconds(5), cdui::atoms::ask::value, run, budget,
                  std::vector<std::string>{key}, false, true, true)
      .receive([&](cdui::memory_answer& a) { answer = std::move(a); },
               [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
    return answer;
  }

  cdui::memory_ledger_status status() {
    cdui::memory_ledger_status out;
    self->request(ledger, std::chrono::seconds(5), cdui::atoms::status::value)
      .receive([&](cdui::memory_ledger_status& s) { out = std::move(s); },
               [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
    return out;
  }

  /// The keys the ledger told the queue memory freed at, since the last call. Taken after a
  /// status(): a slot's memory_freed reaches the ledger before its status answer does.
  std::multiset<std::string> freed() {
    std::multiset<std::string> keys;
    for (bool more = true; more;)
      queue->receive([&](cdui::atoms::memory_freed, const std::string& key) { keys.insert(key); },
                     caf::after(std::chrono::milliseconds(0)) >> [&] { more = false; });
    return keys;
  }

  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  cdui::actors::memory_ledger_actor ledger =
    system.spawn(cdui::actors::memory_ledger, cdui::actors::memory_ledger_config{});
  caf::scoped_actor queue{system};
  caf::scoped_actor self{system};
};

} // namespace

BOOST_AUTO_TEST_SUITE(memory_ledger_test)

BOOST_AUTO_TEST_CASE(a_shared_sim_card_runs_two_budgets_and_the_third_waits_for_memory) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "1x2GiB")};
  BOOST_TEST(srv.share_device("sim:0", true).empty());

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
  BOOST_TEST(cdui::test::eventually([&] { return !waiting_reason(srv, c.run_id).empty(); }));
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
    BOOST_TEST(srv.share_device("sim:0", true).empty());
    BOOST_TEST(srv.share_device("sim:7", true) == "this server has no device 'sim:7' (see GET "
                                                   "/api/status for its devices)");
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
  BOOST_TEST(again.share_device("sim:0", false).empty());
  BOOST_TEST(again.memory().cards.empty());
  auto plain = again.submit(cdui::test::request(moons_graph_json(1, 2, 16, "sim:0")));
  BOOST_REQUIRE(plain.ok());
  BOOST_TEST(to_string(again.wait(plain.run_id).status) == "succeeded");
}

BOOST_AUTO_TEST_CASE(a_graph_that_succeeded_once_gets_its_measured_peak_plus_20_percent_as_budget) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "1x1GiB")};
  BOOST_TEST(srv.share_device("sim:0", true).empty());
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
  for (const auto& e : srv.events(measured.run_id, 0).events)
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

BOOST_AUTO_TEST_SUITE_END()
