// DDP on a worker (docs/ddp.md): a run whose TrainingLoop has strategy ddp, queued on a real agent
// with a device set of two sim cards, trains as two `cdui exec` ranks that the agent starts and
// watches.
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <fstream>

#include "integration/worker_helpers.hpp"
#include "testkit/wait.hpp"

using namespace std::chrono_literals;
using namespace cdui::test;
using nlohmann::json;

namespace {

/// A moons run of `epochs` on w1's sim:0 and sim:1 with its loop's strategy ddp.
json ddp_on_w1(int epochs) {
  auto body = moons_on("w1", {"sim:0", "sim:1"}, epochs);
  body["graph"]["nodes"][5]["params"]["strategy"] = "ddp";
  return body;
}

/// The pid of rank `k` of the run, or -1 while it has none.
pid_t rank_pid(const temp_home& home, const std::string& id, int k) {
  for (auto pid : run_processes(home, id)) {
    std::ifstream in{"/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary};
    std::string cmdline{std::istreambuf_iterator<char>{in}, {}};
    if (cmdline.find(std::string{"--rank"} + '\0' + std::to_string(k) + '\0') != std::string::npos)
      return pid;
  }
  return -1;
}

/// A server and the agent w1 with two sim cards; no run process of the home outlives a test.
struct worker_w1 {
  temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  std::unique_ptr<process> agent = start_agent(home, "w1");
  worker_w1() { await_worker(srv, "w1", "online"); }
};

json read_json(const std::filesystem::path& file) {
  std::ifstream in{file};
  return json::parse(in, nullptr, false);
}

} // namespace

BOOST_AUTO_TEST_SUITE(ddp_test)

BOOST_FIXTURE_TEST_CASE(a_ddp_run_on_two_cards_of_a_worker_trains_in_two_ranks_and_leaves_no_process, worker_w1) {
  auto id = srv.submit_ok(ddp_on_w1(2));
  auto run = srv.wait_final(id);
  BOOST_TEST_REQUIRE(run["status"] == "succeeded", run.dump());
  const auto& loop = run["final_metrics"]["loop"];
  BOOST_TEST(loop["strategy"] == "ddp");
  BOOST_TEST(loop["world_size"] == 2);
  BOOST_TEST(loop["effective_batch_size"] == 64);  // 32 per card
  BOOST_TEST(loop["total_epochs_run"] == 2);
  BOOST_TEST(loop["peak_memory_bytes"].size() == 2u, loop.dump());
  auto dir = home.path() / "agents" / "w1" / "runs" / id;
  BOOST_TEST(std::filesystem::exists(dir / "output-rank1.log"));
  BOOST_TEST(read_json(dir / "outcome-rank1.json")["status"] == "succeeded");
  BOOST_TEST(run_processes(home, id).empty());

  // On one card of the worker there is nothing to spread over: it trains single, saying so.
  auto single = moons_on("w1", {"sim:1"}, 1);
  single["graph"]["nodes"][5]["params"]["strategy"] = "ddp";
  auto one = srv.submit_ok(single);
  BOOST_TEST(srv.wait_final(one)["final_metrics"]["loop"]["world_size"] == 1);
  bool warned = false;
  for (const auto& e : srv.all_events(one))
    warned = warned || (e["type"] == "run_warning" && e["data"]["kind"] == "ddp_not_available");
  BOOST_TEST(warned);
}

BOOST_FIXTURE_TEST_CASE(a_killed_rank_fails_the_run_naming_it_and_a_cancel_stops_both_at_one_batch, worker_w1) {

  // kill -9 of rank 1 mid-epoch: the run fails with its rank's error; no process of it is left.
  auto id = srv.submit_ok(ddp_on_w1(1'000'000));
  srv.await_status(id, "running");
  BOOST_TEST_REQUIRE(eventually([&] { return rank_pid(home, id, 1) > 0; }));
  BOOST_TEST_REQUIRE(eventually([&] { return training(srv, id); }));
  ::kill(rank_pid(home, id, 1), SIGKILL);
  auto failed = srv.wait_final(id);
  BOOST_TEST(failed["status"] == "failed");
  BOOST_TEST(failed["error"].get<std::string>().rfind("DDP rank 1 of 2 failed: the run's process was "
                                                      "killed by signal 9", 0) == 0u, failed.dump());
  BOOST_TEST(run_processes(home, id).empty());

  // A cancel reaches both ranks, which agree on the batch to stop at.
  auto stopped = srv.submit_ok(ddp_on_w1(1'000'000));
  srv.await_status(stopped, "running");
  BOOST_TEST_REQUIRE(eventually([&] { return training(srv, stopped); }));
  srv.cancel(stopped);
  auto cancelled = srv.wait_final(stopped);
  BOOST_TEST(cancelled["status"] == "cancelled", cancelled.dump());
  auto dir = home.path() / "agents" / "w1" / "runs" / stopped;
  auto rank0 = read_json(dir / "outcome.json")["final_metrics"]["loop"];
  auto rank1 = read_json(dir / "outcome-rank1.json")["final_metrics"]["loop"];
  BOOST_TEST(rank0["total_batches"].get<std::int64_t>() > 0);
  BOOST_TEST(rank0["total_batches"] == rank1["total_batches"], rank0.dump() << " / " << rank1.dump());
  BOOST_TEST(run_processes(home, stopped).empty());
}

BOOST_AUTO_TEST_CASE(the_ranks_of_a_run_whose_agent_was_killed_stop_after_the_resume_grace) {
  temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  auto agent = start_cdui({"agent", "start", "--foreground", "--name", "w1"},
                          {{"CODEFYUI_HOME", home.path().string()}, {"CODEFYUI_SIM_DEVICES", "2x1GiB"},
                           {"CODEFYUI_WORKER_RESUME_GRACE_S", "1"}});
  await_worker(srv, "w1", "online");
  auto id = srv.submit_ok(ddp_on_w1(1'000'000));
  srv.await_status(id, "running");
  BOOST_TEST_REQUIRE(eventually([&] { return rank_pid(home, id, 1) > 0; }));
  BOOST_TEST_REQUIRE(eventually([&] { return training(srv, id); }));

  // kill -9 of the agent: its ranks, handed to init, went on training for nobody. Now each notices
  // the agent is gone, none comes back within the grace (1 s here), and both stop at one batch.
  agent->signal(SIGKILL);
  agent->wait_for(10s);
  BOOST_TEST(eventually([&] { return run_processes(home, id).empty(); }, 60s));
  auto dir = home.path() / "agents" / "w1" / "runs" / id;
  // Rank 0 watches for the agent; rank 1 stops with it, at the same batch.
  BOOST_TEST(read_json(dir / "outcome.json")["status"] == "interrupted");
  auto rank0 = read_json(dir / "outcome.json")["final_metrics"]["loop"];
  auto rank1 = read_json(dir / "outcome-rank1.json")["final_metrics"]["loop"];
  BOOST_TEST(rank0["total_batches"] == rank1["total_batches"], rank0.dump() << " / " << rank1.dump());
  std::ifstream log{dir / "exec.log"};
  std::string text{std::istreambuf_iterator<char>{log}, {}};
  BOOST_TEST(text.find("its agent has been gone for 1 s (CODEFYUI_WORKER_RESUME_GRACE_S)") != std::string::npos,
             text);
}

BOOST_AUTO_TEST_SUITE_END()
