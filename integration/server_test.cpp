// A real server process (`cdui start --foreground`) on 127.0.0.1 with a temporary home, driven over
// HTTP as a user's tools drive it.
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <future>

#include "messages/wire.hpp"
#include "testkit/env.hpp"
#include "testkit/graphs.hpp"
#include "testkit/server_process.hpp"
#include "testkit/wait.hpp"

using namespace std::chrono_literals;
using cdui::test::endless_run;
using cdui::test::short_run;
using cdui::test::server_process;
using cdui::test::run_cdui;
using cdui::test::temp_home;
using nlohmann::json;

namespace {

/// The readers a run's actor holds waiting for its next event, as /api/status shows it (0 when the
/// tree has no such run).
std::uint64_t long_polls(const nlohmann::json& node, const std::string& run_id) {
  if (node.value("kind", "") == "run" && node.value("id", "") == run_id)
    return node["state"]["long_polls"].get<std::uint64_t>();
  if (node.contains("children"))
    for (const auto& child : node["children"])
      if (auto n = long_polls(child, run_id))
        return n;
  return 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(server_test)

BOOST_AUTO_TEST_CASE(five_runs_on_one_card_queue_at_positions_one_to_four_and_start_in_order) {
  cdui::test::temp_home home;
  server_process srv{home};
  std::vector<std::string> ids{srv.submit_ok(endless_run())};
  srv.await_status(ids[0], "running");
  // The second run fails at run time (a CSV file that is not there): it must not block the rest.
  auto failing = short_run();
  failing["graph"]["nodes"][0]["params"] = {{"name", "csv"}, {"path", (home.path() / "no.csv").string()}};
  ids.push_back(srv.submit_ok(failing));
  for (int i = 0; i < 3; ++i)
    ids.push_back(srv.submit_ok(short_run()));

  auto listed = srv.get_json("/api/runs?status=queued");
  BOOST_TEST(listed["total"] == 4);
  for (const auto& run : listed["runs"]) {
    auto at = std::find(ids.begin(), ids.end(), run["run_id"].get<std::string>()) - ids.begin();
    BOOST_TEST(run["queue_position"] == at);  // ids[1] is at 1, ..., ids[4] at 4
    BOOST_TEST(run["queue_key"] == "sim:0");
    BOOST_TEST(run["active"] == true);
    BOOST_TEST(run["progress"].is_null());
  }
  // The running run's object says where it is: its latest progress event.
  BOOST_TEST(cdui::test::eventually([&] {
    return srv.get_json("/api/runs/" + ids[0])["progress"].is_object();
  }));
  auto progress = srv.get_json("/api/runs?status=running")["runs"][0]["progress"];
  BOOST_TEST(progress["epochs"] == 1'000'000);
  BOOST_TEST(progress["epoch"].get<int>() >= 1);
  srv.cancel(ids[0]);
  std::vector<json> done;
  for (const auto& id : ids)
    done.push_back(srv.wait_final(id));
  BOOST_TEST(done[0]["status"] == "cancelled");
  BOOST_TEST(done[1]["status"] == "failed");
  BOOST_TEST(done[1]["error"].get<std::string>().find("no.csv") != std::string::npos);
  for (std::size_t i = 2; i < done.size(); ++i)
    BOOST_TEST(done[i]["status"] == "succeeded");
  for (std::size_t i = 1; i < done.size(); ++i)  // start order = submit order, never two at once
    BOOST_TEST(done[i]["started_ms"].get<std::int64_t>() >= done[i - 1]["finished_ms"].get<std::int64_t>());
  auto page = srv.get_json("/api/runs?limit=2&offset=1");
  BOOST_TEST(page["total"] == 5);
  BOOST_TEST(page["runs"][0]["run_id"] == ids[3]);  // newest first
  BOOST_TEST(page["runs"][0]["progress"].is_null());  // it has ended
}

BOOST_AUTO_TEST_CASE(the_cpu_runs_two_at_once_and_the_third_waits) {
  cdui::test::temp_home home;
  server_process srv{home};
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(srv.submit_ok(endless_run("cpu")));
  srv.await_status(ids[0], "running");
  srv.await_status(ids[1], "running");
  // Judged at its submit, in the queue's handler: what the queue answers now is that.
  auto third = srv.get_json("/api/runs/" + ids[2]);
  BOOST_TEST(third["status"] == "queued");
  BOOST_TEST(third["queue_position"] == 1);
  auto status = srv.get_json("/api/status");
  auto queue = status["children"][0];
  BOOST_TEST(queue["kind"] == "run_queue");
  BOOST_TEST(queue["mailbox"].is_number());
  bool found = false;
  for (const auto& q : queue["state"]["queues"]) {
    if (q["device"] == "cpu") {
      found = true;
      BOOST_TEST(q["limit"] == 2);
      BOOST_TEST(q["running"].size() == 2u);
      BOOST_TEST(q["waiting"].size() == 1u);
    }
  }
  BOOST_TEST(found);
  auto metrics = srv.client().Get("/metrics");
  BOOST_TEST(metrics->body.find("cdui_queue_length{device=\"cpu\"} 1") != std::string::npos,
             metrics->body);
  BOOST_TEST(metrics->body.find("cdui_runs{status=\"running\"} 2") != std::string::npos);
  for (const auto& id : ids)
    srv.cancel(id);
}

BOOST_AUTO_TEST_CASE(a_limit_override_lets_two_runs_share_a_card) {
  cdui::test::temp_home home;
  server_process srv{home, {{"CODEFYUI_RUN_QUEUE_MAX_CONCURRENT", "SIM:0 = 2, nonsense"}}};
  auto a = srv.submit_ok(endless_run());
  auto b = srv.submit_ok(endless_run());
  srv.await_status(a, "running");
  srv.await_status(b, "running");
  srv.cancel(a);
  srv.cancel(b);
  std::ifstream log{home.path() / "server.log"};
  std::string text{std::istreambuf_iterator<char>{log}, {}};
  BOOST_TEST(text.find("skipped the entry ' nonsense'") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(a_card_shared_over_http_shows_its_ledger_in_devices_and_metrics) {
  cdui::test::temp_home home;
  server_process srv{home};
  auto c = srv.client();
  auto put = [&](const std::string& device, const json& body, bool with_token = true) {
    auto path = "/api/devices/" + device + "/sharing";
    return with_token ? c.Put(path.c_str(), srv.auth(), body.dump(), "application/json")
                      : c.Put(path.c_str(), body.dump(), "application/json");
  };
  BOOST_TEST(put("sim:0", {{"mode", "shared"}}, false)->status == 403);
  auto bad = put("sim:0", {{"mode", "sometimes"}});
  BOOST_TEST(bad->status == 400);
  BOOST_TEST(json::parse(bad->body)["detail"].get<std::string>().rfind("field 'mode'", 0) == 0u);
  BOOST_TEST(put("sim:9", {{"mode", "shared"}})->status == 404);
  auto ok = put("sim:0", {{"mode", "shared"}});
  BOOST_TEST(ok->status == 200, ok->body);

  // A run without a budget is asked for one; with one it runs, and the ledger shows it.
  auto none = srv.submit(endless_run());
  BOOST_TEST(none->status == 400);
  BOOST_TEST(json::parse(none->body)["detail"].get<std::string>().rfind("option 'target.memory_gib'", 0) == 0u);
  auto body = endless_run();
  body["options"]["target"] = {{"memory_gib", 0.5}};
  auto id = srv.submit_ok(body);
  srv.await_status(id, "running");
  auto devices = srv.get_json("/api/devices")["devices"];
  BOOST_REQUIRE(devices.size() == 2u);
  BOOST_TEST(devices[1]["device"] == "sim:0");
  BOOST_TEST(devices[1]["mode"] == "shared");
  BOOST_TEST(devices[1]["memory"]["runs"][0]["run_id"] == id);
  BOOST_TEST(devices[1]["memory"]["runs"][0]["budget_bytes"] == 512 * 1024 * 1024);
  auto metrics = c.Get("/metrics")->body;
  BOOST_TEST(metrics.find("cdui_card_memory_bytes{device=\"sim:0\",kind=\"running\"} 536870912")
             != std::string::npos, metrics);
  srv.cancel(id);
}

BOOST_AUTO_TEST_CASE(every_refusal_has_its_status_and_names_the_field) {
  cdui::test::temp_home home;
  server_process srv{home, {{"CODEFYUI_RUN_INTERACTIVE_MAX_CONCURRENT", "1"}}};
  auto c = srv.client();
  auto expect = [&](const httplib::Result& res, int status, const std::string& words) {
    BOOST_REQUIRE(res);
    BOOST_TEST(res->status == status, res->body);
    auto detail = json::parse(res->body, nullptr, false);
    BOOST_REQUIRE(detail.is_object());
    BOOST_TEST(detail["detail"].get<std::string>().find(words) != std::string::npos, res->body);
  };
  auto good = short_run();
  auto with_options = [&](json options) {
    auto body = good;
    body["options"] = std::move(options);
    return srv.submit(body);
  };
  expect(c.Post("/api/runs", good.dump(), "application/json"), 403, "X-CodefyUI-Token");
  expect(c.Post("/api/runs", {{"X-CodefyUI-Token", "wrong"}}, good.dump(), "application/json"), 403,
         "session token");
  expect(with_options({{"colour", "red"}}), 400, "option 'colour' is not known");
  expect(with_options({{"device", "gpu"}}), 400, "option 'device'");
  expect(with_options({{"seed", -1}}), 400, "option 'seed'");
  expect(with_options({{"seed", 4294967296ULL}}), 400, "option 'seed'");
  expect(with_options({{"seed", "7"}}), 400, "option 'seed'");
  expect(with_options({{"lane", "fast"}}), 400, "option 'lane'");
  expect(with_options({{"device", "sim:0"}, {"target", {{"devices", {"sim:0"}}}}}), 400,
         "give one: device for one card, target.devices for a set");
  expect(with_options({{"session", "tab-1"}}), 400, "it needs option 'lane' \"interactive\"");
  expect(with_options({{"target", {{"devices", {"sim:0", "cuda:0"}}}}}), 400,
         "this server does not offer cuda:0 (it offers cpu, sim:0)");
  auto long_name = good;
  long_name["name"] = std::string(65, 'x');
  expect(srv.submit(long_name), 400, "field 'name'");
  expect(srv.submit({{"graph", {{"nodes", json::array()}}}}), 400, "the graph is empty");
  expect(srv.submit({{"options", {{"seed", 1}}}}), 422, "field 'graph' is missing");
  expect(srv.submit({{"graph", "not an object"}}), 422, "field 'graph' must be a JSON object");
  auto invalid = short_run();
  invalid["graph"]["nodes"][5]["params"]["epochs"] = -3;
  expect(srv.submit(invalid), 400, "node 'loop'");

  expect(c.Get("/api/runs/nosuchid"), 404, "no run has the id 'nosuchid'");
  auto no_events = c.Get("/api/runs/nosuchid/events?wait=1");
  BOOST_TEST(no_events->status == 404);
  BOOST_TEST(json::parse(no_events->body)["detail"] == "no run has the id 'nosuchid'");
  expect(c.Get("/api/runs/nosuchid/metrics"), 404, "nosuchid");
  expect(c.Post("/api/runs/nosuchid/cancel", srv.auth(), "", "application/json"), 404, "nosuchid");
  expect(c.Delete("/api/runs/nosuchid", srv.auth()), 404, "nosuchid");
  expect(c.Get("/api/runs?status=finished"), 400, "status 'finished'");
  expect(c.Get("/api/runs?limit=-1"), 400, "'limit'");
  expect(c.Get("/api/runs?limit=0"), 400, "'limit' must be an integer of at least 1");
  expect(c.Get("/api/runs/abc/events?limit=0"), 400, "'limit'");
  expect(c.Get("/api/nothing"), 404, "no such endpoint: GET /api/nothing");

  auto running = srv.submit_ok(endless_run());
  srv.await_status(running, "running");
  expect(c.Delete(("/api/runs/" + running).c_str()), 403, "X-CodefyUI-Token");
  expect(c.Delete(("/api/runs/" + running).c_str(), srv.auth()), 409, "cancel it first");
  auto interactive = endless_run("cpu");
  interactive["options"]["lane"] = "interactive";
  auto first = srv.submit_ok(interactive);
  expect(srv.submit(interactive), 503, "interactive lane is full");
  srv.cancel(first);
  srv.cancel(running);
  srv.wait_final(running);
  auto deleted = c.Delete(("/api/runs/" + running).c_str(), srv.auth());
  BOOST_TEST(deleted->status == 200);
  BOOST_TEST(c.Get(("/api/runs/" + running).c_str())->status == 404);
}

BOOST_AUTO_TEST_CASE(a_long_poll_wakes_on_the_first_event_and_metrics_come_as_json_and_csv) {
  cdui::test::temp_home home;
  server_process srv{home};
  auto blocker = srv.submit_ok(endless_run());
  srv.await_status(blocker, "running");
  auto waiting = srv.submit_ok(short_run());
  // The queued run has no events yet: the poll waits until it starts.
  auto poll = std::async(std::launch::async, [&] {
    auto started = std::chrono::steady_clock::now();
    auto page = srv.get_json("/api/runs/" + waiting + "/events?cursor=0&wait=30");
    return std::make_pair(page, std::chrono::steady_clock::now() - started);
  });
  // Parked: the run's actor holds the poll (its long_polls in /api/status) and has not answered it.
  BOOST_TEST_REQUIRE(cdui::test::eventually([&] { return long_polls(srv.get_json("/api/status"), waiting) == 1; }));
  BOOST_TEST((poll.wait_for(0ms) == std::future_status::timeout));
  srv.cancel(blocker);
  auto [page, took] = poll.get();
  BOOST_TEST(!page["events"].empty());
  BOOST_TEST(page["events"][0]["type"] == "execution_start");
  BOOST_TEST(page["events"][0]["data"]["device"] == "sim:0");
  BOOST_TEST((took < 25s));  // woken by the run's first event, not at its 30 s

  auto done = srv.wait_final(waiting);
  BOOST_TEST(done["status"] == "succeeded");
  auto events = srv.all_events(waiting);
  BOOST_TEST(events.back()["type"] == "execution_complete");
  for (std::size_t i = 0; i < events.size(); ++i)
    BOOST_TEST(events[i]["cursor"] == i + 1);

  auto csv = srv.client().Get(("/api/runs/" + waiting + "/metrics?format=csv").c_str());
  BOOST_TEST(csv->status == 200);
  BOOST_TEST(csv->get_header_value("Content-Type") == "text/csv");
  BOOST_TEST(csv->body.rfind("node,name,step,value,time_ms\n", 0) == 0u, csv->body);
  BOOST_TEST(csv->body.find("\nloop,train_loss,1,") != std::string::npos, csv->body);
  auto loss = srv.get_json("/api/runs/" + waiting + "/metrics?name=train_loss");
  BOOST_REQUIRE(loss["metrics"].size() == 1u);
  BOOST_TEST(loss["metrics"][0]["value"].get<double>() > 0.0);
  auto health = srv.get_json("/api/health");
  BOOST_TEST(health["status"] == "ok");
  BOOST_TEST(health["caches"]["run_output_store"]["max_bytes"] == 2147483648LL);
}

BOOST_AUTO_TEST_CASE(after_kill_9_the_queued_runs_come_back_in_order_and_the_running_one_is_interrupted) {
  cdui::test::temp_home home;
  std::string running;
  std::vector<std::string> queued;
  {
    server_process srv{home};
    running = srv.submit_ok(endless_run());
    srv.await_status(running, "running");
    for (int i = 0; i < 3; ++i)
      queued.push_back(srv.submit_ok(short_run()));
    srv.proc().signal(SIGKILL);
    srv.proc().wait_for(10s);
  }
  server_process srv{home};
  auto interrupted = srv.wait_final(running);
  BOOST_TEST(interrupted["status"] == "interrupted");
  auto events = srv.all_events(running);
  BOOST_TEST(events.back()["type"] == "execution_stopped");
  BOOST_TEST(events.back()["data"]["reason"] == "interrupted");
  BOOST_TEST(events.back()["data"]["message"] == "the server stopped while the run was running");
  std::vector<json> done;
  for (const auto& id : queued)
    done.push_back(srv.wait_final(id));
  for (std::size_t i = 0; i < done.size(); ++i) {
    BOOST_TEST(done[i]["status"] == "succeeded");
    if (i > 0)
      BOOST_TEST(done[i]["started_ms"].get<std::int64_t>() >= done[i - 1]["finished_ms"].get<std::int64_t>());
  }
}

BOOST_AUTO_TEST_CASE(a_server_that_cannot_listen_leaves_the_queued_runs_alone) {
  cdui::test::temp_home home;
  std::string queued;
  {
    server_process srv{home};
    srv.await_status(srv.submit_ok(endless_run()), "running");
    queued = srv.submit_ok(short_run());
    srv.proc().signal(SIGKILL);
    srv.proc().wait_for(10s);
  }
  cdui::test::temp_home other;
  server_process busy{other};
  cdui::test::process second{{CDUI_BINARY, "start", "--foreground", "--port",
                              std::to_string(busy.port())},
                             {{"CODEFYUI_HOME", home.path().string()}}};
  auto code = second.wait_for(60s);
  BOOST_REQUIRE(code.has_value());
  BOOST_TEST(*code == 1);
  BOOST_TEST(second.err().find("cannot listen on 127.0.0.1:" + std::to_string(busy.port()))
             != std::string::npos, second.err());
  // Still queued, to be picked up by the next server that does start.
  server_process srv{home};
  BOOST_TEST(srv.wait_final(queued)["status"] == "succeeded");
}

BOOST_AUTO_TEST_CASE(start_status_and_stop_from_the_command_line) {
  cdui::test::temp_home home;
  std::map<std::string, std::string> env{{"CODEFYUI_HOME", home.path().string()}};
  auto cli = [&](std::vector<std::string> args) { return cdui::test::run_cdui(std::move(args), env); };
  // Whatever happens below, the background server must not outlive the test.
  cdui::test::background_server_guard guard{home.path()};
  auto [started, out, err] = cli({"start", "--port", "0"});
  BOOST_TEST(started == 0, err);
  BOOST_TEST(out.find("cdui server started: http://127.0.0.1:") != std::string::npos, out);
  auto token = home.path() / "session.token";
  auto mode = std::filesystem::status(token).permissions() & std::filesystem::perms::all;
  BOOST_TEST((mode == (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write)),
             "the token file's mode is " << std::oct << static_cast<int>(mode));
  auto [again, out2, err2] = cli({"start", "--port", "0"});
  BOOST_TEST(again == 1);
  BOOST_TEST(err2.find("already running") != std::string::npos, err2);
  auto [status, out3, err3] = cli({"status"});
  BOOST_TEST(status == 0);
  BOOST_TEST(out3.find("cdui server running") != std::string::npos, out3);
  auto [stopped, out4, err4] = cli({"stop"});
  BOOST_TEST(stopped == 0, err4);
  BOOST_TEST(out4.find("cdui server stopped") != std::string::npos, out4);
  auto [status2, out5, err5] = cli({"status"});
  BOOST_TEST(status2 == 1);
  BOOST_TEST(out5.find("no cdui server is running") != std::string::npos, out5);
  BOOST_TEST(!std::filesystem::exists(home.path() / "server.json"));

  // A bad setting: the server says why and exits 2, in the foreground and in the background
  // alike, at once (it used to wait forever for the actors it had started).
  env["CODEFYUI_SIM_DEVICES"] = "2x8GiB,lots";
  for (auto args : {std::vector<std::string>{"start", "--port", "0", "--foreground"},
                    std::vector<std::string>{"start", "--port", "0"}}) {
    auto [code, out6, err6] = cli(args);
    BOOST_TEST(code == 2, err6);
    BOOST_TEST(err6.find("sim devices entry 'lots'") != std::string::npos, err6);
  }
}

BOOST_AUTO_TEST_CASE(a_start_that_cannot_bind_its_zmq_port_leaves_the_homes_token_as_it_was) {
  temp_home busy_home;
  server_process busy{busy_home};  // holds its ZeroMQ port
  auto busy_port = cdui::test::zmq_endpoint(busy_home);
  busy_port = busy_port.substr(busy_port.rfind(':') + 1);

  temp_home home;
  {
    server_process first{home};  // leaves the home a token
  }
  auto token = cdui::test::token_of(home);
  BOOST_REQUIRE(!token.empty());
  auto failed = run_cdui(home, {"start", "--foreground", "--port", "0", "--zmq-port", busy_port});
  BOOST_TEST(failed.code != 0);
  BOOST_TEST(failed.err.find(busy_port) != std::string::npos, failed.err);
  BOOST_TEST(cdui::test::token_of(home) == token);

  // A home that had no token gets none from a start that fails.
  temp_home fresh;
  BOOST_TEST(run_cdui(fresh, {"start", "--foreground", "--port", "0", "--zmq-port", busy_port}).code != 0);
  BOOST_TEST(!std::filesystem::exists(fresh.path() / "session.token"));
}

BOOST_AUTO_TEST_CASE(version_metrics_and_the_status_summary_say_what_runs_what_waits_and_why) {
  cdui::test::temp_home home;
  server_process srv{home};
  auto version = srv.get_json("/api/version");
  BOOST_TEST(version["version"] == srv.get_json("/api/workers")["server_version"]);
  BOOST_TEST(version["protocol"] == cdui::wire::protocol_version);
  BOOST_TEST(version["uptime_s"].get<double>() >= 0.0);
  auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  BOOST_TEST(version["started_ms"].get<std::int64_t>() <= now_ms);
  BOOST_TEST(version["started_ms"].get<std::int64_t>() > now_ms - 600'000);

  auto running = srv.submit_ok(endless_run());
  srv.await_status(running, "running");
  auto waiting = srv.submit_ok(short_run());
  auto body = srv.client().Get("/api/status")->body;
  BOOST_TEST(body.rfind("{\"summary\":", 0) == 0u, body.substr(0, 200));  // at the top
  auto status = json::parse(body);
  const auto& summary = status["summary"];
  BOOST_REQUIRE(summary["running"].size() == 1u);
  BOOST_TEST(summary["running"][0]["run_id"] == running);
  BOOST_TEST(summary["running"][0]["device"] == "sim:0");
  BOOST_REQUIRE(summary["waiting"].size() == 1u);
  BOOST_TEST(summary["waiting"][0]["run_id"] == waiting);
  BOOST_TEST(summary["waiting"][0]["kind"] == "card_busy");
  auto why = summary["waiting"][0]["reason"].get<std::string>();
  BOOST_TEST(why.find("behind run " + running + " (running)") != std::string::npos, why);
  BOOST_TEST(summary["text"][0].get<std::string>().rfind("1 running, 1 waiting, in 1 busy of ", 0) == 0u,
             summary["text"].dump());
  BOOST_TEST(summary["text"][1] == "run " + waiting + " " + why);
  BOOST_TEST(summary["queues"][0]["device"] == "sim:0");
  BOOST_TEST(status["kind"] == "server");  // the actor tree stays as it was
  BOOST_TEST(status["children"][0]["kind"] == "run_queue");

  auto metrics = srv.client().Get("/metrics")->body;
  for (const auto& line :
       {"cdui_build_info{version=\"" + version["version"].get<std::string>() + "\",protocol=\""
          + std::to_string(cdui::wire::protocol_version) + "\"} 1",
        std::string{"cdui_uptime_seconds "}, std::string{"cdui_start_time_seconds "},
        std::string{"cdui_runs_by_reason{status=\"queued\",reason=\"card_busy\"} 1"},
        std::string{"# TYPE cdui_queue_wait_seconds histogram"},
        std::string{"cdui_queue_wait_seconds_bucket{le=\"+Inf\"} 1"},
        std::string{"cdui_queue_wait_seconds_count 1"}})
    BOOST_TEST(metrics.find(line) != std::string::npos, line);

  srv.cancel(running);
  BOOST_TEST(srv.wait_final(waiting)["status"] == "succeeded");
  auto failing = short_run();
  failing["graph"]["nodes"][0]["params"] = {{"name", "csv"}, {"path", (home.path() / "no.csv").string()}};
  auto failed = srv.wait_final(srv.submit_ok(failing));
  BOOST_TEST(failed["status"] == "failed");
  metrics = srv.client().Get("/metrics")->body;
  BOOST_TEST(metrics.find("cdui_queue_wait_seconds_count 3") != std::string::npos, metrics);
  BOOST_TEST(metrics.find("cdui_runs_by_reason{status=\"failed\",reason=\"node\"} 1")
               != std::string::npos,
             failed["error"].dump());
  BOOST_TEST(metrics.find("cdui_runs_by_reason{status=\"queued\"") == std::string::npos);
  BOOST_TEST(srv.get_json("/api/status")["summary"]["waiting"].empty());
}

// An idle OpenMP thread that spins takes a core from the run beside it: the runtime's processes
// let idle threads sleep, unless the user chose otherwise.
BOOST_AUTO_TEST_CASE(the_runtime_lets_idle_openmp_threads_sleep_unless_told_otherwise) {
  auto policy = [](pid_t pid) {
    std::ifstream in{"/proc/" + std::to_string(pid) + "/environ"};
    std::string entry;
    while (std::getline(in, entry, '\0'))
      if (entry.rfind("OMP_WAIT_POLICY=", 0) == 0)
        return entry.substr(16);
    return std::string{"(unset)"};
  };
  temp_home home;
  {
    cdui::test::scoped_env chosen{"OMP_WAIT_POLICY", "active"};
    server_process srv{home};
    BOOST_TEST(policy(srv.pid()) == "active");
  }
  cdui::test::scoped_env restore{"OMP_WAIT_POLICY", ""};
  ::unsetenv("OMP_WAIT_POLICY");
  server_process srv{home};
  BOOST_TEST(policy(srv.pid()) == "passive");
}

BOOST_AUTO_TEST_SUITE_END()
