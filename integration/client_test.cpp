// `cdui run`, `cdui runs` and `cdui cancel` as clients of a real server process on 127.0.0.1, and
// the same commands when no server runs; the stores' endpoints over HTTP.
#include <boost/test/unit_test.hpp>

#include <fstream>

#include "testkit/server_process.hpp"
#include "testkit/graphs.hpp"

using namespace std::chrono_literals;
using cdui::test::moons_graph_json;
using cdui::test::run_cdui;
using cdui::test::run_id_in;
using cdui::test::start_cdui;
using cdui::test::write_graph;
using cdui::test::server_process;
using nlohmann::json;

namespace {

/// A run that keeps sim:0 busy until it is cancelled.
std::string occupy_sim0(const server_process& srv) {
  auto id = srv.submit_ok({{"graph", moons_graph_json(1'000'000, 0, 16, "sim:0")}});
  srv.await_status(id, "running");
  return id;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

} // namespace

BOOST_AUTO_TEST_SUITE(client_test)

BOOST_AUTO_TEST_CASE(cdui_run_submits_to_the_server_prints_its_place_once_and_follows_it_to_the_end) {
  cdui::test::temp_home home;
  server_process srv{home};
  auto blocker = occupy_sim0(srv);
  auto graph = write_graph(home, "short", moons_graph_json(2, 0, 16, "sim:0"));
  auto p = start_cdui(home, {"run", graph, "--seed", "1", "--deterministic"});
  BOOST_REQUIRE_MESSAGE(p->wait_for_output("queued, position 1 on sim:0", 60s), p->out() << p->err());
  srv.cancel(blocker);
  auto code = p->wait_for(120s);
  BOOST_REQUIRE(code.has_value());
  auto out = p->out();
  BOOST_TEST(*code == 0, out << p->err());
  BOOST_TEST(out.find("submitted to the server at http://127.0.0.1:" + std::to_string(srv.port()))
             != std::string::npos, out);
  BOOST_TEST(count_of(out, "queued, position") == 1u, out);
  BOOST_TEST(out.find("started (seed 1") != std::string::npos, out);
  BOOST_TEST(out.find("[loop] epoch 2 train_loss") != std::string::npos, out);
  // The per-step and per-batch series are in the store, not a line each on the terminal.
  BOOST_TEST(out.find("train_loss_batch") == std::string::npos, out);
  BOOST_TEST(out.find("val_loss_step") == std::string::npos, out);
  BOOST_TEST(out.find("succeeded in") != std::string::npos, out);
  BOOST_TEST(out.find("loop.total_epochs_run = 2") != std::string::npos, out);
  BOOST_TEST(out.find("embedded") == std::string::npos, out);
  auto run = srv.get_json("/api/runs/" + run_id_in(out));
  BOOST_TEST(run["status"] == "succeeded");
  BOOST_TEST(run["options"]["deterministic"] == true);
  BOOST_TEST(run["options"]["seed"] == 1);
}

BOOST_AUTO_TEST_CASE(detach_timeout_and_ctrl_c_stop_following_and_leave_the_run_queued) {
  cdui::test::temp_home home;
  server_process srv{home};
  auto blocker = occupy_sim0(srv);
  auto graph = write_graph(home, "waits", moons_graph_json(1, 2, 16, "sim:0"));

  auto detached = run_cdui(home, {"run", graph, "--detach", "--name", "detached"});
  BOOST_TEST(detached.code == 0, detached.err);
  BOOST_TEST(detached.out.find("detached") != std::string::npos, detached.out);
  auto detached_id = run_id_in(detached.out);

  auto timed = run_cdui(home, {"run", graph, "--timeout", "1"});
  BOOST_TEST(timed.code == 1, timed.err);
  BOOST_TEST(timed.out.find("timeout: stopped following run") != std::string::npos, timed.out);
  auto timed_id = run_id_in(timed.out);

  auto followed = start_cdui(home, {"run", graph});
  BOOST_REQUIRE(followed->wait_for_output("queued, position 3 on sim:0", 60s));
  followed->signal(SIGINT);
  auto code = followed->wait_for(30s);
  BOOST_REQUIRE(code.has_value());
  BOOST_TEST(*code == 130);
  BOOST_TEST(followed->out().find("it continues on the server") != std::string::npos);
  auto interrupted_id = run_id_in(followed->out());

  for (const auto& id : {detached_id, timed_id, interrupted_id})
    BOOST_TEST(srv.get_json("/api/runs/" + id)["status"] == "queued", id);
  auto listed = run_cdui(home, {"runs", "--status", "queued"});
  BOOST_TEST(listed.code == 0, listed.err);
  for (const auto& id : {detached_id, timed_id, interrupted_id})
    BOOST_TEST(listed.out.find(id) != std::string::npos, listed.out);
  BOOST_TEST(listed.out.find("detached") != std::string::npos, listed.out);
  // Running, not queued: no row of its own (the first queued run's REASON names it).
  BOOST_TEST(listed.out.find("\n" + blocker) == std::string::npos, listed.out);
  BOOST_TEST(listed.out.find("behind run " + blocker + " (running)") != std::string::npos, listed.out);

  auto cancelled = run_cdui(home, {"cancel", timed_id});
  BOOST_TEST(cancelled.code == 0, cancelled.err);
  BOOST_TEST(cancelled.out.find("cancelled before it started") != std::string::npos, cancelled.out);
  BOOST_TEST(srv.get_json("/api/runs/" + timed_id)["status"] == "cancelled");
  auto unknown = run_cdui(home, {"cancel", "nosuchid"});
  BOOST_TEST(unknown.code == 2);
  BOOST_TEST(unknown.err.find("no run has the id or name 'nosuchid'") != std::string::npos, unknown.err);

  auto stop_blocker = run_cdui(home, {"cancel", blocker});
  BOOST_TEST(stop_blocker.out.find("cancel requested; it stops before its next batch")
             != std::string::npos, stop_blocker.out);
  auto again = run_cdui(home, {"cancel", blocker});
  BOOST_TEST(again.out.find("was not cancelled") != std::string::npos, again.out);
  BOOST_TEST(srv.wait_final(blocker)["status"] == "cancelled");
  BOOST_TEST(srv.wait_final(detached_id)["status"] == "succeeded");
  BOOST_TEST(srv.wait_final(interrupted_id)["status"] == "succeeded");
}

BOOST_AUTO_TEST_CASE(a_run_the_server_refuses_exits_2_with_its_reason) {
  cdui::test::temp_home home;
  server_process srv{home};
  auto graph = write_graph(home, "g", moons_graph_json(1, 1));
  auto r = run_cdui(home, {"run", graph, "--device", "gpu"});
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("the server refused the run: option 'device'") != std::string::npos, r.err);
  BOOST_TEST(srv.get_json("/api/runs")["total"] == 0);
}

BOOST_AUTO_TEST_CASE(without_a_server_cdui_run_trains_embedded_and_runs_reads_the_store) {
  cdui::test::temp_home home;
  auto graph = write_graph(home, "alone", moons_graph_json(1, 2));
  auto r = run_cdui(home, {"run", graph, "--seed", "4"});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out.find("no cdui server is running on " + home.path().string()
                        + ": training on the embedded runtime") != std::string::npos, r.out);
  auto id = run_id_in(r.out.substr(r.out.find('\n') + 1));
  auto listed = run_cdui(home, {"runs"});
  BOOST_TEST(listed.code == 0, listed.err);
  BOOST_TEST(listed.out.find(id) != std::string::npos, listed.out);
  BOOST_TEST(listed.out.find("succeeded") != std::string::npos, listed.out);

  auto detach = run_cdui(home, {"run", graph, "--detach"});
  BOOST_TEST(detach.code == 2);
  BOOST_TEST(detach.err.find("--detach needs a running server") != std::string::npos, detach.err);
  auto cancel_cmd = run_cdui(home, {"cancel", id});
  BOOST_TEST(cancel_cmd.code == 1);
  BOOST_TEST(cancel_cmd.err.find("no cdui server is running") != std::string::npos, cancel_cmd.err);
  auto bad_status = run_cdui(home, {"runs", "--status", "done"});
  BOOST_TEST(bad_status.code == 2);
}

BOOST_AUTO_TEST_CASE(cdui_runs_shows_each_runs_budget_and_why_it_failed) {
  cdui::test::temp_home home;
  server_process srv{home};
  // 2-8192-2 with Adam holds far more than 0.0002 GiB (209.7 KiB): it outgrows its budget.
  auto graph = write_graph(home, "held", moons_graph_json(1, 4, 8192, "sim:0"));
  auto r = run_cdui(home, {"run", graph, "--memory-gib", "0.0002"});
  BOOST_TEST(r.code == 1, r.out << r.err);
  BOOST_TEST(r.err.find("The run is held to its memory budget of 209.7 KiB per card (typed: "
                        "target.memory_gib)") != std::string::npos, r.err);
  auto id = run_id_in(r.out);
  auto listed = run_cdui(home, {"runs"});
  BOOST_TEST(listed.code == 0, listed.err);
  BOOST_TEST(listed.out.rfind("ID        NAME", 0) == 0u, listed.out);
  BOOST_TEST(listed.out.find("BUDGET") != std::string::npos, listed.out);
  BOOST_TEST(listed.out.find("REASON") != std::string::npos, listed.out);
  auto line = listed.out.substr(listed.out.find(id));
  line = line.substr(0, line.find('\n'));
  BOOST_TEST(line.find("209.7 KiB") != std::string::npos, line);
  BOOST_TEST(line.find("Node TrainingLoop (loop) ran out of memory on sim:0.") != std::string::npos, line);
}

BOOST_AUTO_TEST_CASE(recorded_outputs_health_and_sessions_over_http) {
  cdui::test::temp_home home;
  server_process srv{home};
  auto recorded = srv.submit_ok({{"graph", moons_graph_json(1, 2)},
                                  {"options", {{"record_outputs", true}, {"seed", 2}}}});
  auto plain = srv.submit_ok({{"graph", moons_graph_json(1, 2)}});
  BOOST_TEST(srv.wait_final(recorded)["status"] == "succeeded");
  BOOST_TEST(srv.wait_final(plain)["status"] == "succeeded");

  auto outputs = srv.get_json("/api/runs/" + recorded + "/outputs");
  BOOST_TEST(outputs["nodes"]["data"]["dataset"]["samples"] == 512);
  BOOST_TEST(outputs["nodes"]["model"]["model"]["parameters"] == 82);
  auto missing = srv.client().Get(("/api/runs/" + plain + "/outputs").c_str());
  BOOST_TEST(missing->status == 404);
  BOOST_TEST(missing->body.find("does not record its outputs") != std::string::npos, missing->body);
  BOOST_TEST(srv.client().Get("/api/runs/nosuchid/outputs")->status == 404);

  auto health = srv.get_json("/api/health");
  BOOST_TEST(health["caches"]["run_output_store"]["runs"] == 1);
  BOOST_TEST(health["caches"]["run_output_store"]["bytes"].get<std::int64_t>() > 512 * 16);
  BOOST_TEST(health["caches"]["execution_cache"]["instances"] == 0);
  auto metrics = srv.client().Get("/metrics")->body;
  BOOST_TEST(metrics.find("cdui_store_bytes{store=\"run_output_store\"} "
                          + std::to_string(health["caches"]["run_output_store"]["bytes"].get<std::int64_t>()))
               != std::string::npos, metrics);

  // An editor session's interactive run fills its cache; closing the session drops it.
  auto interactive = srv.submit_ok({{"graph", moons_graph_json(1, 2)},
                                     {"options", {{"lane", "interactive"}, {"session", "tab-9"}}}});
  srv.wait_final(interactive);
  BOOST_TEST(srv.get_json("/api/health")["caches"]["execution_cache"]["instances"] == 1);
  auto c = srv.client();
  BOOST_TEST(c.Delete("/api/sessions/tab-9")->status == 403);
  auto closed = c.Delete("/api/sessions/tab-9", srv.auth());
  BOOST_TEST(closed->status == 200);
  BOOST_TEST(json::parse(closed->body)["closed"] == true);
  BOOST_TEST(srv.get_json("/api/health")["caches"]["execution_cache"]["instances"] == 0);
}

BOOST_AUTO_TEST_SUITE_END()
