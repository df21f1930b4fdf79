// Agents as SLURM jobs, on a real one-node SLURM cluster (testkit/slurm_cluster.hpp): the batch
// script cdui ships (packaging/slurm/cdui-agents.sbatch) starts an agent on the allocation's node,
// which joins a real server as a member of the fleet 'slurm-*' and runs runs; a scancel ends the
// allocation, and with it the run it executes (interrupted, reason worker_left, at once), leaving
// no process behind.
#include <boost/test/unit_test.hpp>

#include <fstream>

#include "integration/worker_helpers.hpp"
#include "testkit/slurm_cluster.hpp"
#include "testkit/wait.hpp"

using namespace std::chrono_literals;
using namespace cdui::test;
using nlohmann::json;

BOOST_AUTO_TEST_SUITE(slurm_test)

BOOST_AUTO_TEST_CASE(a_slurm_allocations_agent_joins_as_a_fleet_member_and_leaves_with_its_runs) {
  temp_home cluster_dir;
  slurm_cluster cluster{cluster_dir.path()};
  if (!cluster.up()) {
    BOOST_WARN_MESSAGE(false, "skipped: " + cluster.why_not());
    return;
  }
  temp_home home;
  temp_home jobs;
  temp_home agents;  // the agent's home on the node (CDUI_AGENT_HOME)
  auto agent_home = agents.path();
  run_process_guard leftovers{agents};
  server_process srv{home, {{"CODEFYUI_WORKER_HEARTBEAT_S", "1"}}};

  auto enrolled = run_cdui(home, {"workers", "enroll", "slurm-*"});
  BOOST_REQUIRE_MESSAGE(enrolled.code == 0, enrolled.err);
  auto credential = enrolled.out.substr(enrolled.out.find("cdui-wk-"), 8 + 64);
  auto credential_file = jobs.path() / "slurm-fleet.credential";
  std::ofstream{credential_file} << credential << "\n";
  std::filesystem::permissions(credential_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  auto job = cluster.submit(std::filesystem::path{CDUI_SOURCE_DIR} / "packaging" / "slurm" / "cdui-agents.sbatch",
                            {{"CDUI", CDUI_BINARY},
                             {"CDUI_SERVER", zmq_endpoint(home)},
                             {"CDUI_CREDENTIAL", credential_file.string()},
                             {"CDUI_AGENT_HOME", agent_home.string()},
                             {"CDUI_AGENT_OPTIONS", "--sim-devices 2x1GiB"}},
                            jobs.path() / "job.out");
  auto name = std::string{"slurm-"} + slurm_cluster::node;
  json w;
  BOOST_REQUIRE_MESSAGE(eventually([&] {
                          w = worker(srv, name);
                          return !w.is_null() && w["status"] == "online";
                        }, 90s),
                        "the allocation's agent did not join: job " << job << " is '" << cluster.state(job)
                          << "'; its output: " << file_text(jobs.path() / "job.out"));
  BOOST_TEST(w["credential"] == "enrolled");
  BOOST_TEST(cluster.state(job) == "RUNNING");

  auto quick = srv.submit_ok(moons_on(name, {"sim:0"}));
  BOOST_TEST(srv.wait_final(quick)["status"] == "succeeded");
  auto id = srv.submit_ok(body_on_worker(moons_graph_json(1'000'000, 0, 16, std::nullopt), name, {"sim:1"}));
  srv.await_status(id, "running");
  BOOST_REQUIRE(eventually([&] { return !run_processes(agent_home, id).empty(); }, 30s));

  // The allocation ends: SLURM stops the agent with SIGTERM, and its machine goes with it.
  cluster.cancel(job);
  auto run = srv.wait_final(id, 60s);
  BOOST_TEST(run["status"] == "interrupted");
  BOOST_TEST(run["error"] == "worker '" + name + "' left with its machine (its agent stopped in SLURM job " + job
                               + " on node " + slurm_cluster::node + "), so the run is interrupted",
             run.dump());
  BOOST_TEST(srv.all_events(id).back()["data"]["reason"] == "worker_left");
  BOOST_TEST(await_worker(srv, name, "disconnected")["reason"].get<std::string>().find("its machine left")
             != std::string::npos);
  BOOST_TEST(eventually([&] { return cluster.state(job).empty(); }, 60s), "job " << job << " is still listed");
  // Nothing of the allocation is left: no agent, no run process.
  BOOST_TEST(eventually([&] {
    return processes_with([&](const std::string& cmdline) { return cmdline.find(agent_home.string()) != std::string::npos; }).empty();
  }, 30s));
  BOOST_TEST(run_processes(agent_home).empty());
  // Its log says it stopped the run it still had.
  auto text = file_text(agent_home / "agents" / name / "agent.log");
  BOOST_TEST(text.find("run " + id + "'s process is stopped: its machine leaves with the agent") != std::string::npos,
             text);
}

BOOST_AUTO_TEST_SUITE_END()
