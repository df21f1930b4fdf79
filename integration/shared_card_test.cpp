// A worker's card shared by memory (seed 001, "Sharing a card"): a real server and agent on
// 127.0.0.1, the share set with `cdui workers share`, runs admitted on the agent's card by their
// budgets, the card's figures from the agent's heartbeats.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <csignal>

#include "integration/worker_helpers.hpp"
#include "testkit/wait.hpp"

using namespace std::chrono_literals;
using namespace cdui::test;
using nlohmann::json;

namespace {

/// An endless run on w1's sim:0, held to `gib` per card; with `wait`, target.wait true.
json endless_on_w1(double gib, bool wait = false) {
  auto body = body_on_worker(moons_graph_json(1'000'000, 0, 16, std::nullopt), "w1", {"sim:0"});
  body["options"]["target"]["memory_gib"] = gib;
  if (wait)
    body["options"]["target"]["wait"] = true;
  return body;
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

  auto a = srv.submit_ok(endless_on_w1(0.8));
  auto b = srv.submit_ok(endless_on_w1(0.8));
  srv.await_status(a, "running");
  srv.await_status(b, "running");
  auto c = srv.submit_ok(endless_on_w1(0.8, true));
  BOOST_TEST(eventually([&] { return srv.get_json("/api/runs/" + c)["waiting_reason"].is_string(); }));
  auto reason = srv.get_json("/api/runs/" + c)["waiting_reason"].get<std::string>();
  BOOST_TEST(reason == "waits for memory: needs 0.8 GiB, sim:0 on w1 has 0.4 GiB free (runs "
                         + std::min(a, b) + ", " + std::max(a, b) + ")");
  BOOST_TEST(srv.get_json("/api/runs/" + c)["status"] == "queued");

  srv.cancel(a);
  srv.await_status(c, "running");
  BOOST_TEST(srv.get_json("/api/runs/" + c)["waiting_reason"].is_null());
  for (const auto& id : {b, c})
    srv.cancel(id);
  for (const auto& id : {a, b, c})
    srv.wait_final(id);

  // Back to Exclusive: one run at a time by count, no budget needed.
  auto exclusive = run_cdui(home, {"workers", "exclusive", "w1", "sim:0"});
  BOOST_TEST(exclusive.code == 0, exclusive.err);
  auto plain = srv.submit_ok(body_on_worker(moons_graph_json(1, 2, 16, std::nullopt), "w1", {"sim:0"}));
  BOOST_TEST(srv.wait_final(plain)["status"] == "succeeded");
}

/// w1's sim:0 as GET /api/workers shows it; null until w1 is listed.
json w1_card(const server_process& srv) {
  auto listing = srv.get_json("/api/workers");
  for (const auto& w : listing["workers"])
    if (w["name"] == "w1")
      for (const auto& d : w["devices"])
        if (d["name"] == "sim:0")
          return d;
  return nullptr;
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
    a = srv.submit_ok(endless_on_w1(0.8));
    srv.await_status(a, "running");
    srv.proc().signal(SIGKILL);
    srv.proc().wait_for(10s);
  }
  server_process srv{home, fast_heartbeats};
  // The mode came back from cdui.db, and the adopted run counts its budget as running.
  BOOST_TEST(eventually([&] {
    auto card = w1_card(srv);
    return card.is_object() && card["memory"].is_object() && !card["memory"]["runs"].empty();
  }));
  auto card = w1_card(srv);
  BOOST_TEST(card["mode"] == "shared");
  BOOST_TEST(card["memory"]["runs"][0]["run_id"] == a);
  BOOST_TEST(card["memory"]["runs"][0]["running"] == true);
  BOOST_TEST(card["memory"]["running_bytes"].get<std::int64_t>()
             == static_cast<std::int64_t>(0.8 * 1024 * 1024 * 1024));
  // So 1.5 GiB does not fit beside it: refused (no target.wait), naming the adopted run.
  auto big = srv.submit_ok(endless_on_w1(1.5));
  auto ended = srv.wait_final(big);
  BOOST_TEST(ended["status"] == "failed");
  BOOST_TEST(ended["error"].get<std::string>().find("(runs " + a + ")") != std::string::npos, ended.dump());
  srv.cancel(a);
  srv.wait_final(a);
}

BOOST_AUTO_TEST_SUITE_END()
