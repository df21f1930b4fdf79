// A worker's card shared by memory (docs/http-api.md, "Cards shared by memory"): a real server and
// agents on 127.0.0.1, the share set with `cdui workers share`, runs admitted on the agent's card by
// their budgets, the card's figures from the agent's heartbeats; a card two agents offer, on one
// ledger.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <optional>
#include <set>

#include <unistd.h>

#include "integration/worker_helpers.hpp"
#include "testkit/sim_hold.hpp"
#include "testkit/wait.hpp"

using namespace std::chrono_literals;
using namespace cdui::test;
using nlohmann::json;

namespace {

constexpr std::int64_t mib = 1LL << 20;
/// A budget of 0.8 GiB, in bytes, as the server counts it.
const auto budget_bytes = static_cast<std::int64_t>(0.8 * 1024 * mib);

/// An endless run on `worker`'s sim:0, held to `gib` per card (none: no budget); with `wait`,
/// target.wait true.
json endless_on(const std::string& worker, std::optional<double> gib, bool wait = false) {
  auto body = body_on_worker(moons_graph_json(1'000'000, 0, 16, std::nullopt), worker, {"sim:0"});
  if (gib)
    body["options"]["target"]["memory_gib"] = *gib;
  if (wait)
    body["options"]["target"]["wait"] = true;
  return body;
}

/// Why run `id` waits, once it waits for memory (or what it says when it never does).
std::string waiting_reason(const server_process& srv, const std::string& id) {
  auto reason = [&] {
    auto r = srv.get_json("/api/runs/" + id)["waiting_reason"];
    return r.is_string() ? r.get<std::string>() : "";
  };
  eventually([&] { return reason().rfind("waits for memory", 0) == 0; });
  return reason();
}

/// Cancels each of `ids` that still goes, and waits until every one has ended.
void end_all(const server_process& srv, std::initializer_list<std::string> ids) {
  for (const auto& id : ids)
    srv.cancel(id);
  for (const auto& id : ids)
    srv.wait_final(id);
}

/// Removes sim card `uuid`'s segment at the end of the scope, should a failed test leave it.
std::shared_ptr<void> segment_removed_after(const std::string& uuid) {
  return {nullptr, [uuid](void*) { std::filesystem::remove("/dev/shm/cdui-sim-" + uuid); }};
}

/// `worker`'s sim:0 in `listing` (GET /api/workers); null until the worker is listed.
json sim0_of(const json& listing, const std::string& worker) {
  for (const auto& w : listing["workers"])
    if (w["name"] == worker)
      for (const auto& d : w["devices"])
        if (d["name"] == "sim:0")
          return d;
  return nullptr;
}

} // namespace

BOOST_AUTO_TEST_SUITE(shared_card_test)

BOOST_AUTO_TEST_CASE(a_workers_shared_card_runs_two_budgets_and_the_third_waits_for_memory) {
  temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  auto agent = start_agent(home, "w1", "1x2GiB");
  await_worker(srv, "w1", "online");

  auto unknown = run_cdui(home, {"workers", "share", "nobody", "sim:0"});
  BOOST_TEST(unknown.code == 1);
  BOOST_TEST(unknown.err.find("no worker named 'nobody' has connected") != std::string::npos, unknown.err);
  auto cpu = run_cdui(home, {"workers", "share", "w1", "cpu"});
  BOOST_TEST(cpu.code == 1);
  BOOST_TEST(cpu.err.find("only a worker's cards (cuda, mps, sim) can be shared") != std::string::npos, cpu.err);
  auto shared = run_cdui(home, {"workers", "share", "w1", "sim:0"});
  BOOST_TEST(shared.code == 0, shared.err);
  BOOST_TEST(shared.out.find("sim:0 on worker 'w1' is shared by memory") != std::string::npos, shared.out);

  auto a = srv.submit_ok(endless_on("w1", 0.8));
  auto b = srv.submit_ok(endless_on("w1", 0.8));
  srv.await_status(a, "running");
  srv.await_status(b, "running");
  auto c = srv.submit_ok(endless_on("w1", 0.8, true));
  BOOST_TEST(waiting_reason(srv, c) == "waits for memory: needs 0.8 GiB, sim:0 on w1 has 0.4 GiB free (runs "
                                        + std::min(a, b) + ", " + std::max(a, b) + ")");
  BOOST_TEST(srv.get_json("/api/runs/" + c)["status"] == "queued");

  srv.cancel(a);
  srv.await_status(c, "running");
  BOOST_TEST(srv.get_json("/api/runs/" + c)["waiting_reason"].is_null());
  end_all(srv, {a, b, c});

  // Back to Exclusive: one run at a time by count, no budget needed.
  auto exclusive = run_cdui(home, {"workers", "exclusive", "w1", "sim:0"});
  BOOST_TEST(exclusive.code == 0, exclusive.err);
  auto plain = srv.submit_ok(body_on_worker(moons_graph_json(1, 2, 16, std::nullopt), "w1", {"sim:0"}));
  BOOST_TEST(srv.wait_final(plain)["status"] == "succeeded");
}

BOOST_AUTO_TEST_CASE(a_card_shared_between_heartbeats_refuses_a_budget_larger_than_it_at_once) {
  // Heartbeats an hour apart: the card's figures come from the agent's hello, not a later beat.
  temp_home home;
  run_process_guard guard{home};
  server_process srv{home, {{"CODEFYUI_WORKER_HEARTBEAT_S", "3600"}}};
  auto agent = start_agent(home, "w1", "1x1GiB");
  await_worker(srv, "w1", "online");
  BOOST_REQUIRE(run_cdui(home, {"workers", "share", "w1", "sim:0"}).code == 0);
  auto big = srv.submit_ok(endless_on("w1", 2.0));
  auto run = srv.wait_final(big, 60s);
  BOOST_TEST(run["status"] == "failed");
  BOOST_TEST(run["error"] == "needs 2.0 GiB, more than sim:0 on w1 has in all (1.0 GiB)");
}

BOOST_AUTO_TEST_CASE(after_kill_9_the_adopted_runs_budget_counts_on_the_shared_card_again) {
  temp_home home;
  run_process_guard guard{home};
  auto agent = start_agent(home, "w1", "1x2GiB");
  std::string a;
  {
    server_process srv{home, fast_heartbeats};
    await_worker(srv, "w1", "online");
    BOOST_REQUIRE(run_cdui(home, {"workers", "share", "w1", "sim:0"}).code == 0);
    a = srv.submit_ok(endless_on("w1", 0.8));
    srv.await_status(a, "running");
    srv.proc().signal(SIGKILL);
    srv.proc().wait_for(10s);
  }
  server_process srv{home, fast_heartbeats};
  // The agent finds the new server (on a busy machine that can take a while), which adopts run a.
  await_worker(srv, "w1", "online", 90s);
  // The mode came back from cdui.db, and the adopted run counts its budget as running.
  BOOST_TEST(eventually([&] {
    auto card = sim0_of(srv.get_json("/api/workers"), "w1");
    return card.is_object() && card["memory"].is_object() && !card["memory"]["runs"].empty();
  }));
  auto card = sim0_of(srv.get_json("/api/workers"), "w1");
  BOOST_TEST(card["mode"] == "shared");
  BOOST_TEST(card["memory"]["runs"][0]["run_id"] == a);
  BOOST_TEST(card["memory"]["runs"][0]["running"] == true);
  BOOST_TEST(card["memory"]["running_bytes"].get<std::int64_t>()
             == static_cast<std::int64_t>(0.8 * 1024 * 1024 * 1024));
  // So 1.5 GiB does not fit beside it: refused (no target.wait), naming the adopted run.
  auto big = srv.submit_ok(endless_on("w1", 1.5));
  auto ended = srv.wait_final(big);
  BOOST_TEST(ended["status"] == "failed");
  BOOST_TEST(ended["error"].get<std::string>().find("(runs " + a + ")") != std::string::npos, ended.dump());
  srv.cancel(a);
  srv.wait_final(a);
}

BOOST_AUTO_TEST_CASE(a_card_two_agents_offer_keeps_one_ledger_and_admits_by_memory_only_while_both_share_it) {
  temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  // Two agents on one GPU server offer the same card (named after this process, so no other
  // test's card is this one).
  auto card = "ledger-" + std::to_string(::getpid());
  auto uuid = "SIM-" + card + "-0";
  auto remove_segment = segment_removed_after(uuid);
  auto w1 = start_agent(home, "w1", "1x2GiB@" + card);
  auto w2 = start_agent(home, "w2", "1x2GiB@" + card);
  await_worker(srv, "w1", "online");
  await_worker(srv, "w2", "online");
  for (const auto* name : {"w1", "w2"}) {
    auto shared = run_cdui(home, {"workers", "share", name, "sim:0"});
    BOOST_REQUIRE_MESSAGE(shared.code == 0, shared.err);
  }

  // One run through each agent: both on the card's one ledger, so a third does not fit beside them.
  auto a = srv.submit_ok(endless_on("w1", 0.8));
  auto b = srv.submit_ok(endless_on("w2", 0.8));
  srv.await_status(a, "running");
  srv.await_status(b, "running");
  auto c = srv.submit_ok(endless_on("w1", 0.8, true));
  BOOST_TEST(waiting_reason(srv, c)
             == "waits for memory: needs 0.8 GiB, sim:0 on w1 (same card as sim:0 on w2) has 0.4 GiB "
                "free (runs " + std::min(a, b) + ", " + std::max(a, b) + ")");
  // GET /api/workers shows that one ledger under each agent's sim:0.
  auto listing = srv.get_json("/api/workers");
  auto ledger = sim0_of(listing, "w1")["memory"];
  BOOST_TEST(ledger == sim0_of(listing, "w2")["memory"]);
  BOOST_TEST(ledger["offerers"] == json::array({"w1/sim:0", "w2/sim:0"}));
  BOOST_TEST(ledger["running_bytes"].get<std::int64_t>() == 2 * budget_bytes);
  std::set<std::string> on_card;
  for (const auto& run : ledger["runs"])
    on_card.insert(run["run_id"].get<std::string>());
  BOOST_TEST((on_card == std::set<std::string>{a, b}));

  // Room made through the other agent wakes the run waiting at this one.
  srv.cancel(b);
  srv.await_status(c, "running");
  BOOST_TEST(srv.get_json("/api/runs/" + c)["waiting_reason"].is_null());
  end_all(srv, {a, b, c});

  // Another user's job takes 1.5 GiB of the card: the ledger has it from the next heartbeat.
  auto holder = hold_sim_memory(uuid, "1536MiB");
  BOOST_TEST(eventually([&] {
    auto memory = sim0_of(srv.get_json("/api/workers"), "w2")["memory"];
    return memory.is_object() && memory["free_bytes"].get<std::int64_t>() <= 512 * mib;
  }));
  auto d = srv.submit_ok(endless_on("w2", 0.8, true));
  BOOST_TEST(waiting_reason(srv, d)
             == "waits for memory: needs 0.8 GiB, sim:0 on w1 (same card as sim:0 on w2) has 0.5 GiB free");
  BOOST_TEST(holder->stop(30s) < 30.0);  // given back: the next heartbeat lets d in
  srv.await_status(d, "running");
  end_all(srv, {d});

  // A run that outgrows its budget runs out of memory alone, saying where its budget came from;
  // its neighbour through the other agent goes on and succeeds.
  auto neighbour_body = body_on_worker(moons_graph_json(2, 0, 16, std::nullopt), "w1", {"sim:0"});
  neighbour_body["options"]["target"]["memory_gib"] = 0.8;
  auto neighbour = srv.submit_ok(neighbour_body);
  // 2-8192-2 with Adam holds far more than 0.0002 GiB (209.7 KiB).
  auto greedy_body = body_on_worker(moons_graph_json(1, 4, 8192, std::nullopt), "w2", {"sim:0"});
  greedy_body["options"]["target"]["memory_gib"] = 0.0002;
  auto greedy = srv.wait_final(srv.submit_ok(greedy_body));
  BOOST_TEST(greedy["status"] == "failed");
  BOOST_TEST(greedy["error"].get<std::string>().find("The run is held to its memory budget of 209.7 KiB per "
                                                     "card (typed: target.memory_gib)") != std::string::npos,
             greedy.dump());
  BOOST_TEST(srv.wait_final(neighbour)["status"] == "succeeded");

  // w2 back to Exclusive, w1 still Shared: w2's runs are not judged by memory, so the card admits
  // one run at a time by count whichever agent it comes through (w1's runs by memory as well).
  auto exclusive = run_cdui(home, {"workers", "exclusive", "w2", "sim:0"});
  BOOST_REQUIRE_MESSAGE(exclusive.code == 0, exclusive.err);
  listing = srv.get_json("/api/workers");
  BOOST_TEST(sim0_of(listing, "w2")["memory"].is_null());
  BOOST_TEST(sim0_of(listing, "w1")["memory"]["offerers"] == json::array({"w1/sim:0"}));
  BOOST_TEST(sim0_of(listing, "w1")["slots"]["shared"][0]["limit"] == 1);
  auto e = srv.submit_ok(endless_on("w2", std::nullopt));
  srv.await_status(e, "running");
  auto f = srv.submit_ok(endless_on("w1", 0.8, true));
  auto waiting = srv.get_json("/api/runs/" + f);  // admission has decided by the time submit answers
  BOOST_TEST(waiting["status"] == "queued");
  BOOST_TEST(waiting["queue_position"] == 1);
  // By count: the card's one place is e's.
  BOOST_TEST(waiting["waiting_reason"]
             == "position 1 in the queue of w1/sim:0; its card (shared with sim:0 on w2) is taken by run "
                  + e + " (running)");
  srv.cancel(e);
  srv.await_status(f, "running");
  BOOST_TEST(sim0_of(srv.get_json("/api/workers"), "w1")["memory"]["runs"][0]["run_id"] == f);
  auto g = srv.submit_ok(endless_on("w2", std::nullopt));
  BOOST_TEST(srv.get_json("/api/runs/" + g)["queue_position"] == 1);
  srv.cancel(f);
  srv.await_status(g, "running");
  end_all(srv, {e, f, g});
}

BOOST_AUTO_TEST_CASE(after_a_restart_a_card_two_agents_share_comes_back_as_one_ledger) {
  temp_home home;
  run_process_guard guard{home};
  auto card = "restart-" + std::to_string(::getpid());
  auto remove_segment = segment_removed_after("SIM-" + card + "-0");
  auto w1 = start_agent(home, "w1", "1x2GiB@" + card);
  auto w2 = start_agent(home, "w2", "1x2GiB@" + card);
  {
    server_process srv{home, fast_heartbeats};
    await_worker(srv, "w1", "online");
    await_worker(srv, "w2", "online");
    for (const auto* name : {"w1", "w2"})
      BOOST_REQUIRE(run_cdui(home, {"workers", "share", name, "sim:0"}).code == 0);
  }
  // The shares come back from cdui.db as each agent offers its card again: by the card's UUID,
  // known as it is offered, both keys on one ledger.
  server_process srv{home, fast_heartbeats};
  BOOST_TEST(eventually([&] {
    auto listing = srv.get_json("/api/workers");
    auto on_w1 = sim0_of(listing, "w1")["memory"];
    return on_w1.is_object() && on_w1 == sim0_of(listing, "w2")["memory"]
           && on_w1["offerers"] == json::array({"w1/sim:0", "w2/sim:0"});
  }));
}

BOOST_AUTO_TEST_SUITE_END()
