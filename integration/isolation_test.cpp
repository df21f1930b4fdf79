// `cdui start --isolation process` (CODEFYUI_ISOLATION=process) on a real server: queued local
// runs execute as `cdui exec --pipe` processes with the same events and results as on a thread; a
// run whose process crashes fails alone; a stuck one is killed at its stop deadline; one whose
// server is killed ends with it.
#include <boost/test/unit_test.hpp>

#include <fstream>

#include "integration/worker_helpers.hpp"
#include "testkit/wait.hpp"

using namespace std::chrono_literals;
using namespace cdui::test;
using nlohmann::json;

namespace {

const std::map<std::string, std::string> in_processes{{"CODEFYUI_ISOLATION", "process"}};

/// Polls until the run's process exists; its pid.
pid_t await_run_process(const temp_home& home, const std::string& id) {
  std::vector<pid_t> pids;
  if (!eventually([&] { return !(pids = run_processes(home, id)).empty(); }, 60s))
    throw std::runtime_error("run " + id + " has no process");
  return pids.front();
}

json seeded_moons(int epochs) {
  // A progress event every batch: the default's every 100 ms would make the count the machine's.
  moons_options o;
  o.epochs = epochs;
  o.progress_interval_ms = 0;
  return {{"graph", moons_graph_json(o)}, {"options", {{"seed", 7}, {"device", "cpu"}}}};
}

std::vector<std::string> event_types(const server_process& srv, const std::string& id) {
  std::vector<std::string> types;
  for (const auto& e : srv.all_events(id))
    types.push_back(e["type"].get<std::string>());
  return types;
}

} // namespace

BOOST_AUTO_TEST_SUITE(isolation_test)

BOOST_AUTO_TEST_CASE(a_run_in_its_own_process_has_the_same_events_and_results_as_on_a_thread) {
  temp_home thread_home;
  temp_home process_home;
  json on_thread;
  std::vector<std::string> thread_types;
  {
    server_process srv{thread_home};
    auto id = srv.submit_ok(seeded_moons(3));
    on_thread = srv.wait_final(id);
    thread_types = event_types(srv, id);
  }
  run_process_guard guard{process_home};
  server_process srv{process_home, in_processes};
  auto id = srv.submit_ok(seeded_moons(3));
  auto in_process = srv.wait_final(id);
  BOOST_TEST(in_process["status"] == "succeeded");
  // Seeded, same threads: bit for bit the same training.
  BOOST_TEST(in_process["final_metrics"] == on_thread["final_metrics"]);
  BOOST_TEST(event_types(srv, id) == thread_types);
  auto events = srv.all_events(id);
  for (std::size_t i = 0; i < events.size(); ++i)
    BOOST_TEST(events[i]["cursor"] == i + 1);
  BOOST_TEST(!srv.get_json("/api/runs/" + id + "/metrics")["metrics"].empty());
  auto folder = process_home.path() / "runs" / id;
  BOOST_TEST(std::filesystem::exists(folder / "exec.log"));  // it ran as `cdui exec`
  BOOST_TEST(std::filesystem::exists(folder / "events.jsonl"));

  // A run that records its outputs needs the server's stores: a thread, and a warning says so.
  auto body = seeded_moons(1);
  body["options"]["record_outputs"] = true;
  auto recorded = srv.submit_ok(body);
  BOOST_TEST(srv.wait_final(recorded)["status"] == "succeeded");
  auto first = srv.all_events(recorded).front();
  BOOST_TEST(first["type"] == "run_warning");
  BOOST_TEST(first["data"]["kind"] == "isolation_fallback");
  BOOST_TEST(srv.client().Get(("/api/runs/" + recorded + "/outputs").c_str())->status == 200);
}

BOOST_AUTO_TEST_CASE(a_run_whose_process_crashes_fails_alone_and_the_run_beside_it_goes_on) {
  temp_home home;
  run_process_guard guard{home};
  server_process srv{home, in_processes};
  auto crashing = srv.submit_ok(seeded_moons(100000));
  auto beside = srv.submit_ok(seeded_moons(100000));
  srv.await_status(crashing, "running");
  srv.await_status(beside, "running");
  auto pid = await_run_process(home, crashing);
  ::kill(pid, SIGSEGV);  // what a segfault in a node does
  auto run = srv.wait_final(crashing, 60s);
  BOOST_TEST(run["status"] == "failed");
  BOOST_TEST(run["error"].get<std::string>().find("killed by signal 11 (SIGSEGV)") != std::string::npos,
             run.dump());
  BOOST_TEST(srv.all_events(crashing).back()["type"] == "execution_error");
  // The server and the other run live on; a cancel reaches its process.
  BOOST_TEST(srv.get_json("/api/runs/" + beside)["status"] == "running");
  srv.cancel(beside);
  BOOST_TEST(srv.wait_final(beside, 60s)["status"] == "cancelled");
  BOOST_TEST(srv.client().Get("/api/health")->status == 200);
  BOOST_TEST(run_processes(home).empty());
}

BOOST_AUTO_TEST_CASE(a_run_in_its_own_process_ends_with_a_server_killed_with_minus_9) {
  temp_home home;
  run_process_guard guard{home};
  std::string id;
  pid_t pid = -1;
  {
    server_process srv{home, in_processes};
    id = srv.submit_ok(seeded_moons(100000));
    pid = await_run_process(home, id);
    ::kill(pid, SIGSTOP);  // as a run in a long node: no event comes to find the pipe closed
    srv.proc().signal(SIGKILL);
    srv.proc().wait_for(10s);
  }
  // It ends with its server, instead of training on a card that the next server gives to other
  // runs.
  BOOST_TEST(eventually([&] { return run_processes(home, id).empty(); }, 30s), "pid " << pid << " trains on");
  server_process srv{home, in_processes};
  BOOST_TEST(srv.get_json("/api/runs/" + id)["status"] == "interrupted");
}

BOOST_AUTO_TEST_CASE(a_stuck_run_in_its_own_process_is_killed_at_its_stop_deadline) {
  temp_home home;
  run_process_guard guard{home};
  auto env = in_processes;
  env["CODEFYUI_STOP_DEADLINE_S"] = "0.2";
  server_process srv{home, env};
  auto id = srv.submit_ok({{"graph", slow_batches_graph_json()}, {"options", {{"device", "cpu"}}}});
  await_run_process(home, id);
  for (std::uint64_t cursor = 0;;) {  // until the first step is done: the second batch is executing
    auto page = srv.get_json("/api/runs/" + id + "/events?wait=5&cursor=" + std::to_string(cursor));
    bool first_batch = false;
    for (const auto& e : page["events"])
      first_batch |= first_step_done(e);
    if (first_batch)
      break;
    BOOST_REQUIRE(page["finished"] == false);
    cursor = page["cursor"].get<std::uint64_t>();
  }
  srv.cancel(id);
  auto run = srv.wait_final(id, 60s);
  BOOST_TEST(run["status"] == "interrupted");
  BOOST_TEST(run["error"].get<std::string>().find("its process was killed") != std::string::npos,
             run.dump());
  BOOST_TEST(run_processes(home).empty());
  auto events = srv.all_events(id);
  BOOST_TEST(events.back()["type"] == "execution_stopped");
}

BOOST_AUTO_TEST_SUITE_END()
