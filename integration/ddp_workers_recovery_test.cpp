// DDP across workers (docs/ddp.md, "Across workers"; issue 34) when the server or an agent
// restarts, or a worker is away for a while: the run goes on and ends as it would have, its parts
// sent once, when they can be, and never again after they ended.
#include <boost/test/unit_test.hpp>

#include <csignal>

#include "integration/ddp_workers_helpers.hpp"
#include "testkit/wait.hpp"

using namespace std::chrono_literals;
using namespace cdui::test;
using nlohmann::json;

BOOST_AUTO_TEST_SUITE(ddp_workers_recovery_test)

BOOST_FIXTURE_TEST_CASE(a_server_stopped_or_killed_and_started_again_adopts_the_run_and_the_other_workers_part, two_agents) {
  std::string id;
  {
    server_process srv{home, env};
    await_worker(srv, "w1", "online");
    await_worker(srv, "w2", "online");
    id = srv.submit_ok(moons_ddp(1'000'000, four_cards));
    BOOST_TEST_REQUIRE(eventually([&] { return training(srv, id); }, 60s));
    srv.stop();  // SIGTERM, as cdui stop sends it: the run goes on on its workers
  }
  // A new server finds the run running and trains on with it, its events reaching the new server;
  // its part on w2 is followed again.
  auto trains_on = [&](const server_process& srv) {
    BOOST_TEST(srv.get_json("/api/runs/" + id)["status"] == "running");
    await_worker(srv, "w1", "online");
    await_worker(srv, "w2", "online");
    auto before = srv.all_events(id).size();
    BOOST_TEST(eventually([&] { return srv.all_events(id).size() > before + 10; }, 60s));
  };
  {
    server_process srv{home, env};
    trains_on(srv);
    srv.proc().signal(SIGKILL);  // now killed: the next server adopts it all the same
    srv.proc().wait_for(10s);
  }
  server_process srv{home, env};
  trains_on(srv);
  srv.cancel(id);
  auto ended = srv.wait_final(id, 120s);
  BOOST_TEST(ended["status"] == "cancelled", ended.dump());
  auto part = home.path() / "agents" / "w2" / "runs" / (id + "-rank2");
  BOOST_TEST(eventually([&] { return std::filesystem::exists(part / "acked"); }, 30s),
             "the new server recorded the part's end, and its agent forgot it");
  BOOST_TEST(eventually([&] { return run_processes(home).empty(); }, 60s));
}

BOOST_FIXTURE_TEST_CASE(a_server_restarted_before_rank_0s_store_is_up_sends_the_other_worker_its_part_then, two_agents) {
  std::string id;
  auto kept = [&] { return home.path() / "runs" / id / "ddp.json"; };
  {
    server_process srv{home, env};
    await_worker(srv, "w1", "online");
    await_worker(srv, "w2", "online");
    // Rank 0's agent is paused: whenever its run starts, the server has stopped by then, and no
    // part of the run was sent.
    w1->signal(SIGSTOP);
    id = srv.submit_ok(moons_ddp(2, four_cards));
    srv.await_status(id, "running");
    using std::filesystem::perms;
    BOOST_TEST_REQUIRE(std::filesystem::exists(kept()));
    BOOST_TEST(((std::filesystem::status(kept()).permissions() & perms::all) == (perms::owner_read | perms::owner_write)),
               "the run's secret is the server's user's alone");
    srv.stop();
  }
  w1->signal(SIGCONT);
  server_process srv{home, env};
  auto run = srv.wait_final(id, 120s);
  BOOST_TEST_REQUIRE(run["status"] == "succeeded", run.dump());
  BOOST_TEST(run["final_metrics"]["loop"]["world_size"] == 4);
  auto w2_part = home.path() / "agents" / "w2" / "runs" / (id + "-rank2");
  BOOST_TEST(json::parse(file_text(w2_part / "outcome-rank3.json"))["status"] == "succeeded");
  BOOST_TEST(eventually([&] { return !std::filesystem::exists(kept()); }), "the run's secret is gone with the run");
  BOOST_TEST(eventually([&] { return run_processes(home).empty(); }, 60s));
}

BOOST_FIXTURE_TEST_CASE(rank_0s_agent_restarted_before_its_store_is_up_starts_the_ranks_that_waited_for_it, two_agents) {
  server_process srv{home, env};
  await_worker(srv, "w1", "online");
  await_worker(srv, "w2", "online");
  // Rank 0 is paused before its store is up (its process has just started): rank 1 waits for it.
  auto id = submit_with_rank_0_paused(srv, home);
  auto folder = home.path() / "agents" / "w1" / "runs" / id;
  auto rank0 = rank_0_of(home, id);
  w1->signal(SIGKILL);
  w1->wait_for(10s);
  w1 = start_agent(home, "w1", "2x1GiB", agent_env);
  await_worker(srv, "w1", "online");
  ::kill(rank0, SIGCONT);
  auto run = srv.wait_final(id, 120s);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  BOOST_TEST(json::parse(file_text(folder / "outcome-rank1.json"))["status"] == "succeeded");
  BOOST_TEST(!std::filesystem::exists(folder / "ranks-waiting.json"));
  BOOST_TEST(eventually([&] { return run_processes(home).empty(); }, 60s));
}

BOOST_FIXTURE_TEST_CASE(a_part_that_ended_before_a_server_restart_is_not_sent_again, two_agents) {
  std::string id;
  auto w2_part = [&] { return home.path() / "agents" / "w2" / "runs" / (id + "-rank2"); };
  pid_t rank0 = -1;
  {
    server_process srv{home, env};
    await_worker(srv, "w1", "online");
    await_worker(srv, "w2", "online");
    // After the loop, rank 0 alone evaluates the model on 3 M test samples: w2's part ends first.
    auto body = moons_ddp(2, four_cards);
    auto& g = body["graph"];
    g["nodes"].push_back({{"id", "test_data"}, {"type", "Dataset"},
                          {"params", {{"name", "moons"}, {"n_samples", 3'000'000}, {"split", "test"}}}});
    g["nodes"].push_back({{"id", "test_loader"}, {"type", "DataLoader"}, {"params", {{"batch_size", 256}}}});
    g["nodes"].push_back({{"id", "eval"}, {"type", "EvaluateModel"}});
    g["edges"].push_back({{"from", "test_data.dataset"}, {"to", "test_loader.dataset"}});
    g["edges"].push_back({{"from", "loop.model"}, {"to", "eval.model"}});
    g["edges"].push_back({{"from", "test_loader.dataloader"}, {"to", "eval.dataloader"}});
    g["edges"].push_back({{"from", "loss.loss_fn"}, {"to", "eval.loss_fn"}});
    id = srv.submit_ok(body);
    BOOST_TEST_REQUIRE(eventually([&] { return std::filesystem::exists(w2_part() / "acked"); }, 120s));
    rank0 = rank_0_of(home, id);
    BOOST_TEST_REQUIRE(::kill(rank0, SIGSTOP) == 0, "rank 0 had ended already");
    srv.stop();
  }
  auto ended_at = std::filesystem::last_write_time(w2_part() / "outcome-rank2.json");
  server_process srv{home, env};
  await_worker(srv, "w1", "online");
  await_worker(srv, "w2", "online");
  ::kill(rank0, SIGCONT);
  auto run = srv.wait_final(id, 120s);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  BOOST_TEST((std::filesystem::last_write_time(w2_part() / "outcome-rank2.json") == ended_at),
             "w2's part was started again");
  BOOST_TEST(eventually([&] { return run_processes(home).empty(); }, 60s));
}

BOOST_FIXTURE_TEST_CASE(a_worker_away_when_rank_0s_store_comes_up_gets_its_part_when_it_is_back,
                        workers_with_grace<120>) {
  // Rank 0 is paused before its store is up, and w2 goes away meanwhile.
  auto id = submit_with_rank_0_paused(srv, home);
  auto rank0 = rank_0_of(home, id);
  w2->signal(SIGSTOP);
  await_worker(srv, "w2", "disconnected");
  ::kill(rank0, SIGCONT);
  auto rendezvous = [&] {
    for (const auto& e : srv.all_events(id))
      if (e["type"] == "ddp_rendezvous")
        return true;
    return false;
  };
  BOOST_TEST_REQUIRE(eventually(rendezvous, 60s));
  // The part waits for w2 (its grace is 120 s) instead of failing the run: it goes when w2 is back.
  w2->signal(SIGCONT);
  auto run = srv.wait_final(id, 120s);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  BOOST_TEST(run["final_metrics"]["loop"]["world_size"] == 4);
  BOOST_TEST(eventually([&] { return run_processes(home).empty(); }, 60s));
}

BOOST_AUTO_TEST_SUITE_END()
