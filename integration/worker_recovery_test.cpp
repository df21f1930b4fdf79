// Worker runs across failures, with real `cdui agent` processes and servers on 127.0.0.1: an agent
// killed mid-run and restarted, a worker gone past the grace period, a server killed with -9 or
// stopped while its worker runs go on, and a run recorded as running that never reached its worker.
// (worker_test has the joins, the wire and the placement; this suite was split from it so that ctest
// runs the two side by side.)
#include <boost/test/unit_test.hpp>

#include <fstream>

#include "integration/worker_helpers.hpp"
#include "storage/run_store.hpp"
#include "testkit/wait.hpp"

using namespace std::chrono_literals;
using namespace cdui::test;
using nlohmann::json;

BOOST_AUTO_TEST_SUITE(worker_recovery_test)

/// The event types of a run as its worker wrote them (events.jsonl in the agent's run folder).
std::vector<std::string> worker_event_types(const cdui::test::temp_home& home, const std::string& agent,
                                            const std::string& id) {
  std::vector<std::string> types;
  std::ifstream in{home.path() / "agents" / agent / "runs" / id / "events.jsonl"};
  std::string line;
  while (std::getline(in, line))
    types.push_back(json::parse(line)["type"].get<std::string>());
  return types;
}

/// The server's record of a run must be the worker's, event for event, with gap-free cursors.
void expect_same_events(const server_process& srv, const cdui::test::temp_home& home,
                        const std::string& agent, const std::string& id) {
  auto events = srv.all_events(id);
  std::vector<std::string> types;
  for (std::size_t i = 0; i < events.size(); ++i) {
    BOOST_TEST(events[i]["cursor"] == i + 1);
    types.push_back(events[i]["type"].get<std::string>());
  }
  auto theirs = worker_event_types(home, agent, id);
  BOOST_TEST(types.size() == theirs.size());
  for (std::size_t i = 0; i < std::min(types.size(), theirs.size()); ++i)
    if (types[i] != theirs[i]) {
      BOOST_ERROR("event " << i + 1 << " is " << types[i] << " on the server and " << theirs[i]
                           << " on the worker");
      break;
    }
}

/// A run on w1's sim:0 that trains for several seconds (6000 steps of a 256-wide moons MLP).
json several_seconds_on_w1() {
  moons_options wide;
  wide.epochs = 1'000'000;
  wide.max_steps = 6000;
  wide.hidden = 256;
  wide.device = std::nullopt;
  auto body = body_on_worker(moons_graph_json(wide), "w1", {"sim:0"});
  body["options"]["seed"] = 1;
  return body;
}

void await_some_events(const server_process& srv, const std::string& id) {
  if (!eventually([&] { return srv.get_json("/api/runs/" + id + "/events")["events"].size() >= 10u; }, 60s))
    throw std::runtime_error("run " + id + " reported too few events");
}

BOOST_AUTO_TEST_CASE(an_agent_killed_mid_run_and_restarted_in_the_grace_period_resumes_its_run) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  auto agent = start_agent(home, "w1");
  await_worker(srv, "w1", "online");
  auto id = srv.submit_ok(several_seconds_on_w1());
  await_some_events(srv, id);
  agent->signal(SIGKILL);
  agent->wait_for(10s);
  // Its run's process outlives it (checked at once: a fast machine may finish the run during
  // the seconds the server takes to see the worker gone).
  BOOST_TEST(run_processes(home).size() == 1u);
  await_worker(srv, "w1", "disconnected");  // the run goes on, unreported
  BOOST_TEST(srv.get_json("/api/runs/" + id)["status"] == "running");
  auto again = start_agent(home, "w1");
  auto run = srv.wait_final(id);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  BOOST_TEST(run["final_metrics"]["loop"]["total_steps"] == 6000);
  expect_same_events(srv, home, "w1", id);
}

BOOST_AUTO_TEST_CASE(past_the_grace_period_a_lost_workers_run_ends_interrupted_and_is_stopped_later) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  auto env = fast_heartbeats;
  env["CODEFYUI_WORKER_RESUME_GRACE_S"] = "1";
  server_process srv{home, env};
  auto agent = start_agent(home, "w1");
  await_worker(srv, "w1", "online");
  auto id = srv.submit_ok(moons_on("w1", {"sim:0"}, 1'000'000));
  await_some_events(srv, id);
  agent->signal(SIGKILL);
  agent->wait_for(10s);
  auto run = srv.wait_final(id, 60s);
  BOOST_TEST(run["status"] == "interrupted");
  BOOST_TEST(run["error"].get<std::string>().find("was not connected for 1 s") != std::string::npos,
             run.dump());
  auto stopped = srv.all_events(id).back();
  BOOST_TEST(stopped["type"] == "execution_stopped");
  BOOST_TEST(stopped["data"]["reason"] == "given_up");
  BOOST_TEST(stopped["data"]["message"] == run["error"]);
  // The run's process kept going without its agent; the next agent is told to forget it.
  BOOST_TEST(run_processes(home).size() == 1u);
  auto again = start_agent(home, "w1");
  eventually([&] { return run_processes(home).empty(); }, 30s);
  BOOST_TEST(run_processes(home).empty());
  BOOST_TEST(srv.get_json("/api/runs/" + id)["status"] == "interrupted");
}

BOOST_AUTO_TEST_CASE(after_kill_9_of_the_server_a_run_on_a_worker_is_adopted_and_finishes) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  auto agent = start_agent(home, "w1");
  std::string id;
  std::string any_id;
  {
    server_process srv{home, fast_heartbeats};
    await_worker(srv, "w1", "online");
    id = srv.submit_ok(several_seconds_on_w1());
    // A run for any worker that was placed on w1 is adopted as w1's run.
    auto body = several_seconds_on_w1();
    body["options"] = {{"device", "sim"}, {"target", {{"worker", "any"}}}};
    any_id = srv.submit_ok(body);
    await_some_events(srv, id);
    await_some_events(srv, any_id);
    srv.proc().signal(SIGKILL);
    srv.proc().wait_for(10s);
  }
  server_process srv{home, fast_heartbeats};
  BOOST_TEST(srv.get_json("/api/runs/" + id)["status"] == "running");  // not interrupted: adoptable
  BOOST_TEST(srv.get_json("/api/runs/" + any_id)["status"] == "running");
  auto run = srv.wait_final(id);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  auto any_run = srv.wait_final(any_id);
  BOOST_TEST(any_run["status"] == "succeeded", any_run.dump());
  BOOST_TEST(any_run["queue_key"] == "w1/sim:1");
  BOOST_TEST(run["final_metrics"]["loop"]["total_steps"] == 6000);
  expect_same_events(srv, home, "w1", id);
  // Its end was acknowledged: the agent's next heartbeats list no run.
  eventually([&] { return worker(srv, "w1")["running_runs"].empty(); }, 10s);
  BOOST_TEST(worker(srv, "w1")["running_runs"].empty());
}

// A server killed after it recorded a worker run as running and before its assignment left (the
// store as such a server leaves it, written here: the moment cannot be hit from outside): the next
// server adopts the run, the agent's hello does not list it, and it is sent to the agent again. Its
// warning from while it queued stays the first event, and none of the agent's events is lost.
BOOST_AUTO_TEST_CASE(a_run_recorded_as_running_that_never_reached_its_worker_is_sent_to_it_again) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  std::string id = "0badf00d";
  {
    server_process srv{home, fast_heartbeats};  // makes the home and its store
  }
  {
    cdui::storage::run_store store{home.path() / "cdui.db"};
    cdui::storage::stored_run run;
    run.info.id = id;
    run.info.name = "never sent";
    run.info.status = cdui::run_status::queued;
    run.info.queue_key = "w1/sim:0";
    run.info.created_ms = 1000;
    auto body = moons_on("w1", {"sim:0"});
    run.info.options = body["options"].dump();
    run.graph_json = body["graph"].dump();
    store.insert(run);
    store.append_event(id, {1, 1000, "run_warning", R"({"kind":"memory_budget","message":"while queued"})"});
    run.info.status = cdui::run_status::running;
    run.info.started_ms = 2000;
    store.record_worker_start(run.info, 1);
  }
  server_process srv{home, fast_heartbeats};
  BOOST_TEST(srv.get_json("/api/runs/" + id)["status"] == "running");
  auto agent = start_agent(home, "w1");
  auto run = srv.wait_final(id);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  auto events = srv.all_events(id);
  std::vector<std::string> types;
  for (std::size_t i = 0; i < events.size(); ++i) {
    BOOST_TEST(events[i]["cursor"] == i + 1);
    types.push_back(events[i]["type"].get<std::string>());
  }
  auto theirs = worker_event_types(home, "w1", id);
  theirs.insert(theirs.begin(), "run_warning");
  BOOST_TEST(types == theirs, json(types).dump() << " on the server; the worker's: " << json(theirs).dump());
  std::ifstream log{home.path() / "server.log"};
  std::string text{std::istreambuf_iterator<char>{log}, {}};
  BOOST_TEST(text.find("run " + id + " never reached worker 'w1': it is sent again") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_stopped_server_leaves_a_worker_run_running_and_the_next_start_adopts_it) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  auto agent = start_agent(home, "w1");
  std::string id;
  {
    server_process srv{home, fast_heartbeats};
    await_worker(srv, "w1", "online");
    id = srv.submit_ok(several_seconds_on_w1());
    await_some_events(srv, id);
    srv.stop();  // SIGTERM, as cdui stop sends it
  }
  server_process srv{home, fast_heartbeats};
  BOOST_TEST(srv.get_json("/api/runs/" + id)["status"] == "running");  // not interrupted: adoptable
  auto run = srv.wait_final(id);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  BOOST_TEST(run["final_metrics"]["loop"]["total_steps"] == 6000);
  expect_same_events(srv, home, "w1", id);
}

BOOST_AUTO_TEST_CASE(an_ephemeral_agent_that_stops_takes_its_runs_with_its_machine) {
  temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  // As in a SLURM allocation: the job's id and node name the machine that leaves.
  auto agent = start_cdui({"agent", "start", "--foreground", "--ephemeral", "--name", "w1"},
                          {{"CODEFYUI_HOME", home.path().string()}, {"CODEFYUI_SIM_DEVICES", "2x1GiB"},
                           {"SLURM_JOB_ID", "4242"}, {"SLURMD_NODENAME", "node07"}});
  await_worker(srv, "w1", "online");
  auto id = srv.submit_ok(several_seconds_on_w1());
  srv.await_status(id, "running");
  BOOST_REQUIRE(eventually([&] { return !run_processes(home, id).empty(); }, 30s));

  agent->signal(SIGTERM);
  BOOST_TEST(agent->wait_for(30s).value_or(-1) == 0);
  // At once, not after the resume grace: the machine is gone, and the run with it.
  auto run = srv.wait_final(id, 30s);
  BOOST_TEST(run["status"] == "interrupted");
  BOOST_TEST(run["error"] == "worker 'w1' left with its machine (its agent stopped in SLURM job 4242 on node "
                             "node07), so the run is interrupted", run.dump());
  auto events = srv.all_events(id);
  BOOST_REQUIRE(!events.empty());
  BOOST_TEST(events.back()["type"] == "execution_stopped");
  BOOST_TEST(events.back()["data"]["reason"] == "worker_left");
  BOOST_TEST(run_processes(home, id).empty());  // killed by the agent, not left to run on
  auto w = await_worker(srv, "w1", "disconnected");
  BOOST_TEST(w["reason"].get<std::string>().find("its machine left") != std::string::npos, w.dump());
}

BOOST_AUTO_TEST_SUITE_END()
