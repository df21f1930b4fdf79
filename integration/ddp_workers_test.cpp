// DDP across workers (docs/ddp.md, "Across workers"; issue 34): a run whose device set names the
// cards of two agents (w1/sim:0 ... w2/sim:1) trains as 4 ranks, 2 on each worker, that meet at
// rank 0's store on 127.0.0.1, to one process's weights; a worker whose agent is killed fails the
// run naming it, and no process of the run is left on any worker. Reads the saved weights with
// torch (unit/runtime/saved_weights.hpp), as the runtime's tests do.
#include <boost/test/unit_test.hpp>

#include <csignal>

#include "integration/ddp_workers_helpers.hpp"
#include "testkit/wait.hpp"
#include "unit/runtime/saved_weights.hpp"

using namespace std::chrono_literals;
using namespace cdui::test;
using nlohmann::json;

namespace {

/// The run's train_loss_batch series, step -> value.
std::map<std::int64_t, double> batch_losses(const server_process& srv, const std::string& id) {
  std::map<std::int64_t, double> values;
  for (const auto& e : srv.all_events(id))
    if (e["type"] == "metric" && e["data"]["name"] == "train_loss_batch")
      values[e["data"]["step"].get<std::int64_t>()] = e["data"]["value"].get<double>();
  return values;
}

/// A 4-rank run cancelled while w2's agent and its ranks there are paused, past the server's
/// heartbeats, with a run queued for w2/sim:0; then w2's agent goes on (its ranks stay paused).
/// The queued run starts, and only once w2's ranks are gone (killed by its agent's stop deadline).
/// Returns how the cancelled run ended.
template <class workers>
json cancel_while_w2_is_away_then_start_the_next_on_w2(workers& f) {
  auto id = f.srv.submit_ok(moons_ddp(1'000'000, four_cards));
  BOOST_TEST_REQUIRE(eventually([&] { return training(f.srv, id); }, 60s));
  auto part = id + "-rank2";
  auto ranks = run_processes(f.home, part);
  BOOST_TEST_REQUIRE(ranks.size() == 2u);
  f.w2->signal(SIGSTOP);
  for (auto pid : ranks)
    ::kill(pid, SIGSTOP);
  await_worker(f.srv, "w2", "disconnected");
  auto next = f.srv.submit_ok(moons_on("w2", {"sim:0"}, 1'000'000));
  f.srv.cancel(id);
  auto ended = f.srv.wait_final(id, 120s);
  f.w2->signal(SIGCONT);
  BOOST_TEST_REQUIRE(eventually([&] { return !run_processes(f.home, next).empty(); }, 120s));
  BOOST_TEST(run_processes(f.home, part).empty(), "a run started on a card that a rank of the last still held");
  f.srv.cancel(next);
  BOOST_TEST(f.srv.wait_final(next, 120s)["status"] == "cancelled");
  BOOST_TEST(eventually([&] { return run_processes(f.home).empty(); }, 60s));
  return ended;
}

} // namespace

BOOST_AUTO_TEST_SUITE(ddp_workers_test)

BOOST_FIXTURE_TEST_CASE(four_ranks_on_two_workers_train_as_one_process_on_the_combined_batches, two_workers) {
  auto id = srv.submit_ok(moons_ddp(2, four_cards));
  auto run = srv.wait_final(id);
  BOOST_TEST_REQUIRE(run["status"] == "succeeded", run.dump());
  const auto& loop = run["final_metrics"]["loop"];
  BOOST_TEST(loop["world_size"] == 4);
  BOOST_TEST(loop["effective_batch_size"] == 128);
  for (const auto& card : four_cards)
    BOOST_TEST(loop["peak_memory_bytes"][card].get<std::int64_t>() > 0, card << " in " << loop.dump());
  // Rank 0's worker ran ranks 0 and 1, w2 ranks 2 and 3 in a part of its own.
  auto w2_part = home.path() / "agents" / "w2" / "runs" / (id + "-rank2");
  // The run ends with rank 0; w2's part ends beside it (its agent forgets it once the server has
  // its end).
  BOOST_TEST_REQUIRE(eventually([&] { return std::filesystem::exists(w2_part / "acked"); }, 60s));
  BOOST_TEST(json::parse(file_text(w2_part / "outcome-rank2.json"))["status"] == "succeeded");
  BOOST_TEST(json::parse(file_text(w2_part / "outcome-rank3.json"))["status"] == "succeeded");
  bool met = false;
  for (const auto& e : srv.all_events(id))
    met = met || (e["type"] == "ddp_rendezvous" && e["data"]["host"] == "127.0.0.1");
  BOOST_TEST(met);

  // One process on one card with the 4 ranks' batches together: the same losses, step by step,
  // and the same weights.
  auto one_body = moons_ddp(2, {"sim:0"}, "w1");
  one_body["graph"]["nodes"][1]["params"]["batch_size"] = 128;
  auto one = srv.submit_ok(one_body);
  BOOST_TEST_REQUIRE(srv.wait_final(one)["status"] == "succeeded");
  auto ranks = batch_losses(srv, id);
  auto reference = batch_losses(srv, one);
  BOOST_TEST_REQUIRE(ranks.size() == 8u);  // 512 samples in 4 steps an epoch, 2 epochs
  BOOST_TEST_REQUIRE(reference.size() == ranks.size());
  for (const auto& [step, value] : reference)
    BOOST_TEST(std::abs(ranks.at(step) - value) < 1e-5, "step " << step << ": " << ranks.at(step) << " vs " << value);
  auto runs = home.path() / "agents" / "w1" / "runs";
  check_close_weights(runs / id / "checkpoints" / "model.pt", runs / one / "checkpoints" / "model.pt");
  BOOST_TEST(eventually([&] { return run_processes(home).empty(); }));
}

BOOST_FIXTURE_TEST_CASE(a_worker_whose_agent_is_killed_fails_the_run_naming_it_and_leaves_no_process, two_workers) {
  auto id = srv.submit_ok(moons_ddp(1'000'000, four_cards));
  srv.await_status(id, "running");
  BOOST_TEST_REQUIRE(eventually([&] { return training(srv, id); }, 60s));
  w2->signal(SIGKILL);
  w2->wait_for(10s);
  auto failed = srv.wait_final(id, 120s);
  BOOST_TEST_MESSAGE("the run's end: " << failed["error"]);
  BOOST_TEST(failed["status"] == "failed");
  BOOST_TEST(failed["error"].get<std::string>().rfind("DDP rank 2 of 4 (on worker 'w2') failed: ", 0) == 0u,
             failed.dump());
  BOOST_TEST(eventually([&] { return run_processes(home).empty(); }, 60s));
}

BOOST_FIXTURE_TEST_CASE(a_rank_killed_on_the_other_worker_fails_the_run_naming_it_and_its_worker, workers_with_grace<120>) {
  auto id = srv.submit_ok(moons_ddp(1'000'000, four_cards));
  BOOST_TEST_REQUIRE(eventually([&] { return training(srv, id); }, 60s));
  auto part = id + "-rank2";
  pid_t rank3 = -1;
  BOOST_TEST_REQUIRE(eventually([&] {
    for (auto pid : run_processes(home, part))
      if (file_text("/proc/" + std::to_string(pid) + "/cmdline").find(std::string{"--rank"} + '\0' + "3" + '\0')
          != std::string::npos)
        rank3 = pid;
    return rank3 > 0;
  }));
  // w1's report (its ranks only lost rank 3) reaches the server first: w2's agent is paused until
  // the server has it, so w2's (rank 3 killed) comes after. The run is named after rank 3 all the same.
  w2->signal(SIGSTOP);
  ::kill(rank3, SIGKILL);
  BOOST_TEST_REQUIRE(eventually([&] {
    return srv.proc().err().find("run " + id + ": rank 0 lost the other ranks") != std::string::npos
           || srv.get_json("/api/runs/" + id)["status"] != "running";
  }, 60s));
  w2->signal(SIGCONT);
  auto failed = srv.wait_final(id, 120s);
  BOOST_TEST(failed["status"] == "failed");
  BOOST_TEST(failed["error"].get<std::string>().rfind("DDP rank 3 of 4 (on worker 'w2') failed: the run's process "
                                                      "was killed by signal 9", 0) == 0u, failed.dump());
  BOOST_TEST(eventually([&] { return run_processes(home).empty(); }, 60s));
}

BOOST_FIXTURE_TEST_CASE(rank_0_killed_fails_the_run_in_its_own_words_not_in_those_of_the_ranks_it_left, two_workers) {
  auto id = srv.submit_ok(moons_ddp(1'000'000, four_cards));
  BOOST_TEST_REQUIRE(eventually([&] { return training(srv, id); }, 60s));
  ::kill(rank_0_of(home, id), SIGKILL);
  // w2's ranks fail at once with "Connection closed by peer", and their report may reach the
  // server before w1's: the run names rank 0's end all the same.
  auto failed = srv.wait_final(id, 120s);
  BOOST_TEST(failed["status"] == "failed");
  BOOST_TEST(failed["error"].get<std::string>().rfind("the run's process was killed by signal 9", 0) == 0u,
             failed.dump());
  BOOST_TEST(eventually([&] { return run_processes(home).empty(); }, 60s));
}

BOOST_FIXTURE_TEST_CASE(a_cancel_that_rank_0_misses_ends_the_run_cancelled_though_w2s_ranks_lost_it, two_workers) {
  auto id = srv.submit_ok(moons_ddp(1'000'000, four_cards));
  BOOST_TEST_REQUIRE(eventually([&] { return training(srv, id); }, 60s));
  // Rank 0 cannot reach its stop check: its agent kills it 2 s after the cancel, and w2's ranks
  // then fail with "Connection closed by peer", their report racing w1's.
  ::kill(rank_0_of(home, id), SIGSTOP);
  srv.cancel(id);
  auto ended = srv.wait_final(id, 120s);
  BOOST_TEST(ended["status"] == "cancelled", ended.dump());
  BOOST_TEST(eventually([&] { return run_processes(home).empty(); }, 60s));
}

BOOST_FIXTURE_TEST_CASE(when_rank_0s_worker_is_lost_the_run_ends_and_the_other_workers_ranks_stop, two_workers) {
  auto id = srv.submit_ok(moons_ddp(1'000'000, four_cards));
  BOOST_TEST_REQUIRE(eventually([&] { return training(srv, id); }, 60s));
  w1->signal(SIGKILL);
  w1->wait_for(10s);
  // Given up after the grace (1 s), as any run of a lost worker; its part on w2 is stopped, and
  // the ranks agree to stop, rank 0 on w1 (orphaned with its agent) included.
  auto ended = srv.wait_final(id, 120s);
  BOOST_TEST(ended["status"] == "interrupted", ended.dump());
  BOOST_TEST(eventually([&] { return run_processes(home).empty(); }, 60s));
}

BOOST_FIXTURE_TEST_CASE(the_other_workers_cards_go_to_the_next_run_only_once_its_part_has_ended, two_workers) {
  auto id = srv.submit_ok(moons_ddp(1'000'000, four_cards));
  BOOST_TEST_REQUIRE(eventually([&] { return training(srv, id); }, 60s));
  auto part = id + "-rank2";
  auto ranks = run_processes(home, part);
  BOOST_TEST_REQUIRE(ranks.size() == 2u);
  // w2's ranks are paused: they cannot stop when asked, and every rank waits for them in its
  // collectives. Each agent kills what it was asked to stop and has not stopped 2 s later.
  for (auto pid : ranks)
    ::kill(pid, SIGSTOP);
  auto next = srv.submit_ok(moons_on("w2", {"sim:0"}, 1));
  srv.cancel(id);
  auto ended = srv.wait_final(id, 120s);
  BOOST_TEST(ended["status"] == "cancelled", ended.dump());
  BOOST_TEST(ended["error"].get<std::string>().find("did not stop within 2 s") != std::string::npos, ended.dump());
  // The run has ended, but w2/sim:0 is still a paused rank's: the next run waits for it.
  srv.await_status(next, "running", 120s);
  BOOST_TEST(run_processes(home, part).empty(), "a run started on a card that a rank of the last still held");
  BOOST_TEST(srv.wait_final(next, 120s)["status"] == "succeeded");
  BOOST_TEST(eventually([&] { return run_processes(home).empty(); }, 60s));
}

BOOST_FIXTURE_TEST_CASE(a_part_cancelled_while_its_worker_is_away_is_stopped_when_it_returns_before_its_cards_go_on,
                        workers_with_grace<120>) {
  // w2 is away within its grace: its part holds its cards. Back, its agent is asked again to stop
  // the part, and kills its ranks 2 s later; only then does the next run start.
  auto ended = cancel_while_w2_is_away_then_start_the_next_on_w2(*this);
  BOOST_TEST(ended["status"] == "cancelled", ended.dump());
}

BOOST_FIXTURE_TEST_CASE(a_part_given_up_while_its_worker_was_away_is_killed_before_its_cards_next_run_starts,
                        two_workers) {
  // The server gives the part up after 1 s: to it w2's cards are free, and the next run goes to w2
  // when it is back. Its agent, told to forget the part, kills its ranks 2 s later, and starts the
  // next run only then.
  cancel_while_w2_is_away_then_start_the_next_on_w2(*this);
}

BOOST_AUTO_TEST_CASE(a_device_set_across_workers_is_refused_naming_what_is_wrong) {
  temp_home home;
  server_process srv{home};
  auto refusal = [&](json devices) {
    auto body = moons_ddp(1, {});
    body["options"]["target"] = {{"devices", devices}};
    auto r = srv.submit(body);
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 400, r->body);
    return json::parse(r->body, nullptr, false).value("detail", r->body);
  };
  BOOST_TEST(refusal({"w1/sim:0", "w2/sim:0"})
             == "option 'target.devices': no worker named 'w1' has connected to this server since it started");
  BOOST_TEST(refusal({"sim:0", "w1/sim:0"})
             == "option 'target.devices': sim:0 names no worker; a device set across workers names each card "
                "with its worker, as WORKER/DEVICE (w1/cuda:0)");
  BOOST_TEST(refusal({"bad name/sim:0"}).find("option 'target.devices[0]': 'bad name/sim:0' does not start with "
                                              "a worker's name") == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
