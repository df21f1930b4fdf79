// Worker agents joining a real server over ZeroMQ on 127.0.0.1: real `cdui agent` processes, and a
// hand-made peer that speaks (or garbles) the wire, with temporary homes.
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <random>

#include "integration/worker_helpers.hpp"
#include "testkit/wait.hpp"

using namespace std::chrono_literals;
using namespace cdui::test;
using nlohmann::json;

BOOST_AUTO_TEST_SUITE(worker_test)

BOOST_AUTO_TEST_CASE(an_agent_joins_with_its_devices_and_a_killed_one_goes_degraded_then_disconnected) {
  cdui::test::temp_home home;
  server_process srv{home, fast_heartbeats};
  auto agent = start_agent(home, "w1");
  auto w = await_worker(srv, "w1", "online");
  std::vector<std::string> devices;
  for (const auto& d : w["devices"])
    devices.push_back(d["name"].get<std::string>());
  BOOST_TEST(devices == (std::vector<std::string>{"cpu", "sim:0", "sim:1"}));
  BOOST_TEST(w["version"] == srv.get_json("/api/workers")["server_version"]);
  BOOST_TEST(w["node_types_digest"] == srv.get_json("/api/workers")["node_types_digest"]);
  BOOST_TEST(w["devices"][1]["total_bytes"] == 1073741824LL);
  BOOST_TEST(bridge_state(srv)["peers"].get<int>() >= 1);
  BOOST_TEST(bridge_state(srv)["frames_out"].get<int>() >= 1);  // the welcome
  BOOST_TEST(srv.client().Get("/metrics")->body.find("cdui_workers{status=\"online\"} 1")
             != std::string::npos);

  auto listing = workers_listing(home);
  BOOST_TEST(listing.find("w1") != std::string::npos, listing);
  BOOST_TEST(listing.find("online") != std::string::npos, listing);
  BOOST_TEST(listing.find("cpu 0/2, sim:0 0/1, sim:1 0/1") != std::string::npos, listing);

  agent->signal(SIGKILL);
  agent->wait_for(10s);
  auto late = await_worker(srv, "w1", "degraded");
  BOOST_TEST(late["reason"].get<std::string>().find("heartbeat late") != std::string::npos);
  auto gone = await_worker(srv, "w1", "disconnected");
  BOOST_TEST(gone["reason"].get<std::string>().find("no heartbeat for") != std::string::npos);

  auto again = start_agent(home, "w1");
  await_worker(srv, "w1", "online");
  BOOST_TEST(srv.get_json("/api/workers")["workers"].size() == 1u);
  again->signal(SIGTERM);
  BOOST_TEST(again->wait_for(30s).value_or(-1) == 0);  // a clean stop
}

BOOST_AUTO_TEST_CASE(an_agent_finds_the_server_again_after_a_restart_on_new_ports) {
  cdui::test::temp_home home;
  auto agent = start_agent(home, "w2");  // before any server: it waits for one
  std::string first_endpoint;
  {
    server_process srv{home, fast_heartbeats};
    first_endpoint = zmq_endpoint(home);
    await_worker(srv, "w2", "online");
  }
  server_process srv{home, fast_heartbeats};
  BOOST_TEST(zmq_endpoint(home) != first_endpoint);
  await_worker(srv, "w2", "online");
  BOOST_TEST(!agent->wait_for(0ms).has_value());  // the same agent process throughout
}

BOOST_AUTO_TEST_CASE(another_version_and_a_wrong_credential_are_refused_with_their_reasons) {
  cdui::test::temp_home home;
  server_process srv{home, fast_heartbeats};
  raw_peer peer{zmq_endpoint(home)};
  auto old = good_hello(home, "old-agent");
  old.version = "0.0.1";
  peer.send(cdui::wire::message_type::hello, old);
  auto answer = peer.receive(10s);
  BOOST_REQUIRE(answer.has_value());
  BOOST_TEST((answer->first == cdui::wire::message_type::refused));
  auto refusal = cdui::wire::decode<cdui::refused>(answer->second);
  BOOST_TEST(refusal->reason.find("runs cdui 0.0.1 and this server runs cdui 0.1.0")
             != std::string::npos, refusal->reason);
  BOOST_TEST(!refusal->retry);

  // A real agent whose home's token is not the server's (the file was rewritten): refused, exits 1.
  auto real_token = token_of(home);
  std::ofstream{home.path() / "session.token"} << std::string(64, '0') << "\n";
  auto agent = start_agent(home, "w3");
  auto code = agent->wait_for(30s);
  BOOST_REQUIRE(code.has_value());
  BOOST_TEST(*code == 1);
  BOOST_TEST(agent->err().find("the credential is not valid") != std::string::npos, agent->err());
  std::ofstream{home.path() / "session.token"} << real_token << "\n";

  auto workers = srv.get_json("/api/workers");
  BOOST_TEST(workers["workers"].empty());
  BOOST_REQUIRE(workers["refused_connections"].size() == 2u);
  BOOST_TEST(workers["refused_connections"][0]["name"] == "old-agent");
  BOOST_TEST(workers["refused_connections"][0]["version"] == "0.0.1");
  BOOST_TEST(workers["refused_connections"][1]["name"] == "w3");

  // The hand-made peer with the right credential is welcomed.
  peer.send(cdui::wire::message_type::hello, good_hello(home, "hand-made"));
  answer = peer.receive(10s);
  BOOST_REQUIRE(answer.has_value());
  BOOST_TEST((answer->first == cdui::wire::message_type::welcome));
  BOOST_TEST(cdui::wire::decode<cdui::welcome>(answer->second)->heartbeat_interval_ms == 500u);
}

BOOST_AUTO_TEST_CASE(ten_thousand_garbage_and_oversized_messages_are_counted_and_change_nothing) {
  cdui::test::temp_home home;
  server_process srv{home, fast_heartbeats};
  raw_peer peer{zmq_endpoint(home)};
  std::mt19937 gen{7};
  auto random_bytes = [&](std::size_t n) {
    std::string s(n, '\0');
    for (auto& c : s)
      c = static_cast<char>(gen());
    return s;
  };
  auto envelope = [](cdui::wire::message_type t, std::uint16_t version = cdui::wire::protocol_version) {
    return cdui::wire::encode_envelope({version, t, 0, "x"});
  };
  std::map<std::string, int> sent;
  for (int i = 0; i < 10'000; ++i) {
    switch (i % 6) {
    case 0:  // one frame of noise
      peer.send({random_bytes(1 + gen() % 64)});
      ++sent["malformed"];
      break;
    case 1:  // noise as the envelope
      peer.send({random_bytes(1 + gen() % 64), random_bytes(gen() % 64)});
      ++sent["malformed"];
      break;
    case 2:  // a good envelope, a payload that is not a hello
      peer.send({envelope(cdui::wire::message_type::hello), random_bytes(gen() % 64)});
      ++sent["malformed"];
      break;
    case 3:
      peer.send({envelope(cdui::wire::message_type::heartbeat, 9), cdui::wire::encode(cdui::heartbeat{})});
      ++sent["wrong_version"];
      break;
    case 4:  // a type only the server sends
      peer.send({envelope(cdui::wire::message_type::welcome), cdui::wire::encode(cdui::welcome{})});
      ++sent["unknown_type"];
      break;
    case 5:
      if (i % 1200 == 5) {  // a few payloads over the 16 MiB limit
        peer.send({envelope(cdui::wire::message_type::hello),
                   std::string(cdui::wire::max_frame_bytes + 1024, 'x')});
        ++sent["too_large"];
      } else {
        peer.send({envelope(cdui::wire::message_type::hello), random_bytes(3), random_bytes(3)});
        ++sent["malformed"];  // three frames after the identity
      }
      break;
    }
  }
  json refused;
  eventually([&] {
    refused = bridge_state(srv)["refused"];
    int total = 0;
    for (const auto& [reason, n] : refused.items())
      total += n.get<int>();
    return total >= 10'000;
  }, 120s);
  for (const auto& [reason, n] : sent)
    BOOST_TEST(refused[reason] == n, reason);
  auto metrics = srv.client().Get("/metrics")->body;
  BOOST_TEST(metrics.find("cdui_bridge_refused_total{reason=\"too_large\"} "
                          + std::to_string(sent["too_large"]))
               != std::string::npos, metrics);
  BOOST_TEST(srv.get_json("/api/workers")["workers"].empty());  // none of it joined
  // The server still answers, and a real agent still joins.
  BOOST_TEST(srv.get_json("/api/health")["status"] == "ok");
  auto agent = start_agent(home, "after-garbage");
  await_worker(srv, "after-garbage", "online");
}

BOOST_AUTO_TEST_CASE(a_run_targeted_at_a_worker_executes_there_on_its_renumbered_card) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  auto agent = start_agent(home, "w1");
  await_worker(srv, "w1", "online");
  auto id = srv.submit_ok(moons_on("w1", {"sim:1"}));
  auto run = srv.wait_final(id);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  BOOST_TEST(run["queue_key"] == "w1/sim:1");
  BOOST_TEST(run["final_metrics"]["loop"]["total_epochs_run"] == 2);
  auto events = srv.all_events(id);
  BOOST_REQUIRE(events.size() > 3u);
  BOOST_TEST(events[0]["type"] == "execution_facts");
  BOOST_TEST(events[0]["data"]["visible_devices"] == json({"sim:0"}));
  BOOST_TEST(events[0]["data"]["device_aliases"] == json({{"sim:0", "sim:1"}}));
  BOOST_TEST(events[1]["type"] == "execution_start");
  BOOST_TEST(events[1]["data"]["device"] == "sim:0");  // the run's name for the worker's sim:1
  BOOST_TEST(events.back()["type"] == "execution_complete");
  for (std::size_t i = 0; i < events.size(); ++i)
    BOOST_TEST(events[i]["cursor"] == i + 1);  // the server's cursors, gap-free
  auto loss = srv.get_json("/api/runs/" + id + "/metrics?name=train_loss");
  BOOST_TEST(loss["metrics"].size() == 2u);
  // The run's folder and output.log stay on the worker.
  BOOST_TEST(std::filesystem::exists(home.path() / "agents" / "w1" / "runs" / id / "output.log"));
  // From the command line, the run's log is the server's output.log of its events, and `show`
  // names the worker and both folders.
  auto logs = run_cdui(home, {"logs", id.substr(0, 6)});
  BOOST_TEST(logs.code == 0, logs.err);
  std::ifstream server_log{home.path() / "runs" / id / "output.log"};
  BOOST_TEST(logs.out == std::string(std::istreambuf_iterator<char>{server_log}, {}));
  BOOST_TEST(logs.out.find(" execution_facts {") != std::string::npos, logs.out);
  auto shown = run_cdui(home, {"show", id});
  BOOST_TEST(shown.out.find("worker:   w1\n") != std::string::npos, shown.out);
  BOOST_TEST(shown.out.find("device:   sim:1\n") != std::string::npos, shown.out);
  BOOST_TEST(shown.out.find("agents/w1/runs/" + id) != std::string::npos, shown.out);

  // A node that names a card the run lacks falls back to the run's first card, with the warning.
  auto pinned = moons_on("w1", {"sim:1"}, 1);
  pinned["graph"]["nodes"][5]["params"]["device"] = "sim:1";
  auto fallback = srv.wait_final(srv.submit_ok(pinned));
  BOOST_TEST(fallback["status"] == "succeeded");
  // The warning names the run's cards, and which of the worker's cards they are (docs/graph-format.md).
  std::vector<json> warnings;
  for (const auto& e : srv.all_events(fallback["run_id"].get<std::string>()))
    if (e["type"] == "run_warning" && e["data"]["kind"] == "device_fallback")
      warnings.push_back(e["data"]);
  BOOST_REQUIRE_EQUAL(warnings.size(), 1u);
  BOOST_TEST(warnings[0]["message"]
             == "Node loop (TrainingLoop) is set to device sim:1; this run has 1 card (sim:0 = the "
                "worker's sim:1), so when it executes, it runs on sim:0.");
  // A node set to auto follows the run's first card, not the machine's (which has no accelerator).
  pinned["graph"]["nodes"][5]["params"]["device"] = "auto";
  auto follows = srv.wait_final(srv.submit_ok(pinned));
  BOOST_TEST(follows["status"] == "succeeded");
  json loop_device;
  for (const auto& e : srv.all_events(follows["run_id"].get<std::string>())) {
    BOOST_TEST(e["type"] != "run_warning", e.dump());
    if (e["type"] == "node_config" && e["data"]["node"] == "loop")
      loop_device = e["data"]["device"];
  }
  BOOST_TEST(loop_device == "sim:0");  // the worker's sim:1
}

BOOST_AUTO_TEST_CASE(a_worker_run_is_refused_for_an_unknown_worker_or_a_device_it_lacks) {
  cdui::test::temp_home home;
  server_process srv{home, fast_heartbeats};
  auto agent = start_agent(home, "w1");
  await_worker(srv, "w1", "online");
  auto expect = [&](const json& body, const std::string& words) {
    auto res = srv.submit(body);
    BOOST_REQUIRE(res);
    BOOST_TEST(res->status == 400, res->body);
    BOOST_TEST(res->body.find(words) != std::string::npos, res->body);
  };
  expect(moons_on("nobody", {"sim:0"}),
         "no worker named 'nobody' has connected to this server since it started (known: w1)");
  expect(moons_on("w1", {"sim:7"}), "worker 'w1' does not offer sim:7 (it offers cpu, sim:0, sim:1)");
  auto interactive = moons_on("w1", {"sim:0"});
  interactive["options"]["lane"] = "interactive";
  expect(interactive, "an interactive run executes on this server");
}

BOOST_AUTO_TEST_CASE(a_run_for_an_away_worker_waits_then_runs_when_it_is_back) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  {
    auto agent = start_agent(home, "w1");
    await_worker(srv, "w1", "online");
    agent->signal(SIGTERM);
    agent->wait_for(30s);
  }
  await_worker(srv, "w1", "disconnected");
  auto id = srv.submit_ok(moons_on("w1", {"sim:0"}, 1));
  // Judged at its submit, in the queue's handler: what the queue answers now is that.
  auto waiting = srv.get_json("/api/runs/" + id);
  BOOST_TEST(waiting["status"] == "queued");
  BOOST_TEST(waiting["queue_position"] == 1);
  BOOST_TEST(waiting["waiting_reason"] == "waits for worker 'w1', which is not connected");
  auto agent = start_agent(home, "w1");
  BOOST_TEST(srv.wait_final(id)["status"] == "succeeded");
}

BOOST_AUTO_TEST_CASE(a_killed_run_process_fails_its_run_alone_and_a_cancel_stops_a_worker_run) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  auto agent = start_agent(home, "w1");
  await_worker(srv, "w1", "online");
  auto doomed = srv.submit_ok(moons_on("w1", {"sim:0"}, 1'000'000));
  auto other = srv.submit_ok(moons_on("w1", {"sim:1"}, 1'000'000));
  srv.await_status(doomed, "running");
  srv.await_status(other, "running");
  eventually([&] { return run_processes(home).size() >= 2u; }, 30s);
  // The doomed run's process: the one whose folder is its run id.
  pid_t victim = -1;
  for (auto pid : run_processes(home)) {
    std::ifstream in{"/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary};
    std::string cmdline{std::istreambuf_iterator<char>{in}, {}};
    if (cmdline.find(doomed) != std::string::npos)
      victim = pid;
  }
  BOOST_REQUIRE(victim > 0);
  ::kill(victim, SIGKILL);
  auto failed = srv.wait_final(doomed);
  BOOST_TEST(failed["status"] == "failed");
  BOOST_TEST(failed["error"].get<std::string>().find("killed by signal 9 (SIGKILL)") != std::string::npos,
             failed.dump());
  BOOST_TEST(srv.get_json("/api/runs/" + other)["status"] == "running");  // the other run goes on
  BOOST_TEST(worker(srv, "w1")["status"] == "online");

  srv.cancel(other);
  auto cancelled = srv.wait_final(other);
  BOOST_TEST(cancelled["status"] == "cancelled", cancelled.dump());
  auto events = srv.all_events(other);
  BOOST_TEST(events.back()["type"] == "execution_stopped");
  BOOST_TEST(events.back()["data"]["reason"] == "cancelled");
  BOOST_TEST(events.back()["data"]["message"] == "cancelled while it was running");
}

BOOST_AUTO_TEST_CASE(cdui_run_with_target_and_devices_follows_a_run_on_a_worker) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  auto graph = home.path() / "g.json";
  std::ofstream{graph} << moons_on("w1", {"sim:1"}, 2)["graph"].dump();
  std::map<std::string, std::string> env{{"CODEFYUI_HOME", home.path().string()}};
  {
    // Without a server there is no worker to send it to.
    cdui::test::process alone{{CDUI_BINARY, "run", graph.string(), "--target", "w1"}, env};
    BOOST_TEST(alone.wait_for(60s).value_or(-1) == 2);
    BOOST_TEST(alone.err().find("--target needs a running server") != std::string::npos, alone.err());
  }
  server_process srv{home, fast_heartbeats};
  auto agent = start_agent(home, "w1");
  await_worker(srv, "w1", "online");
  cdui::test::process run{{CDUI_BINARY, "run", graph.string(), "--target", "w1", "--devices", "sim:1",
                           "--seed", "3"},
                          env};
  auto code = run.wait_for(120s);
  BOOST_REQUIRE(code.has_value());
  BOOST_TEST(*code == 0, run.out() << run.err());
  BOOST_TEST(run.out().find("[loop] epoch 2 train_loss") != std::string::npos, run.out());
  BOOST_TEST(run.out().find("succeeded") != std::string::npos, run.out());
  auto runs = srv.get_json("/api/runs");
  BOOST_TEST(runs["runs"][0]["queue_key"] == "w1/sim:1");
  BOOST_TEST(runs["runs"][0]["options"]["target"]["worker"] == "w1");
}

BOOST_AUTO_TEST_CASE(a_draining_worker_finishes_its_run_and_takes_no_new_one_until_undrained) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  auto agent = start_agent(home, "w1");
  await_worker(srv, "w1", "online");
  auto c = srv.client();
  auto running = srv.submit_ok(moons_on("w1", {"sim:0"}, 3));
  srv.await_status(running, "running");
  auto sim0 = worker(srv, "w1")["devices"][1];
  BOOST_TEST(sim0["name"] == "sim:0");
  BOOST_TEST(sim0["slots"] == json({{"taken", 1}, {"limit", 1}, {"waiting", 0}, {"shared", json::array()}}));
  BOOST_TEST(c.Post("/api/workers/w1/drain", "", "application/json")->status == 403);
  BOOST_TEST(c.Post("/api/workers/nobody/drain", srv.auth(), "", "application/json")->status == 404);
  auto drained = c.Post("/api/workers/w1/drain", srv.auth(), "", "application/json");
  BOOST_TEST(drained->status == 200, drained->body);
  BOOST_TEST(await_worker(srv, "w1", "draining")["draining"] == true);
  auto waiting = srv.submit_ok(moons_on("w1", {"sim:1"}, 1));  // sim:1 is free, but w1 drains
  // It says why, on the run object and in `cdui runs`.
  const std::string draining = "waits for worker 'w1', which is draining (undrain it with cdui workers undrain w1)";
  BOOST_TEST(eventually([&] { return srv.get_json("/api/runs/" + waiting)["waiting_reason"] == draining; }),
             srv.get_json("/api/runs/" + waiting).dump());
  auto listing = run_cdui(home, {"runs", "--status", "queued"}, 30s);
  BOOST_TEST(listing.code == 0, listing.err);
  BOOST_TEST(listing.out.find(waiting) != std::string::npos, listing.out);
  BOOST_TEST(listing.out.find(draining) != std::string::npos, listing.out);
  BOOST_TEST(srv.wait_final(running)["status"] == "succeeded");  // the running run finishes
  // The queue judged the waiting run again at that end, before it answered that the run ended.
  BOOST_TEST(srv.get_json("/api/runs/" + waiting)["status"] == "queued");
  BOOST_TEST(c.Post("/api/workers/w1/undrain", srv.auth(), "", "application/json")->status == 200);
  await_worker(srv, "w1", "online");
  BOOST_TEST(srv.wait_final(waiting)["status"] == "succeeded");
}

json endless_for(const json& target, const std::string& device = "sim") {
  return {{"graph", moons_graph_json(1'000'000, 0, 16, std::nullopt)},
          {"options", {{"device", device}, {"target", target}}}};
}

BOOST_AUTO_TEST_CASE(any_with_a_device_set_runs_on_a_worker_that_has_the_whole_set_free) {
  // An any run with a set runs on a worker, which renumbers the set from sim:0.
  cdui::test::temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};  // this server offers sim:0 only
  auto a = start_agent(home, "a-worker");      // sim:0 and sim:1
  await_worker(srv, "a-worker", "online");
  json body{{"graph", moons_graph_json(1, 2, 16, std::nullopt)},
            {"options", {{"seed", 1}, {"target", {{"worker", "any"}, {"devices", {"sim:1", "sim:0"}}}}}}};
  auto id = srv.submit_ok(body);
  auto run = srv.wait_final(id);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  BOOST_TEST(run["queue_key"] == "a-worker/sim:1");
  auto events = srv.all_events(id);
  BOOST_REQUIRE(!events.empty());
  BOOST_TEST(events[0]["type"] == "execution_facts");
  BOOST_TEST(events[0]["data"]["device_aliases"] == json({{"sim:0", "sim:1"}, {"sim:1", "sim:0"}}));

  // One card of the set busy: it waits, saying for what, and goes once the card is free.
  auto busy = srv.submit_ok(json{{"graph", moons_graph_json(1'000'000, 0, 16, std::nullopt)},
                                  {"options", {{"target", {{"worker", "a-worker"}, {"devices", {"sim:0"}}}}}}});
  srv.await_status(busy, "running");
  body["options"]["seed"] = 2;
  auto waiting = srv.submit_ok(body);
  auto queued = srv.get_json("/api/runs/" + waiting);
  BOOST_TEST(queued["status"] == "queued");
  BOOST_TEST(queued["waiting_reason"] == "waits for a worker that takes runs with all of sim:1, sim:0 free");
  srv.cancel(busy);
  BOOST_TEST(srv.wait_final(waiting)["status"] == "succeeded");

  // No worker offers the whole set: 400, nothing queued.
  body["options"]["target"]["devices"] = {"sim:0", "sim:7"};
  auto refused = srv.submit(body);
  BOOST_TEST(refused->status == 400);
  BOOST_TEST(refused->body.find("no worker that has connected to this server since it started offers "
                                "the whole set sim:0, sim:7") != std::string::npos, refused->body);
}

BOOST_AUTO_TEST_CASE(any_takes_free_worker_cards_in_name_order_then_this_servers_and_skips_drained) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};  // this server offers sim:0
  auto a = start_agent(home, "a-worker");  // each worker offers sim:0 and sim:1
  auto b = start_agent(home, "b-worker");
  await_worker(srv, "a-worker", "online");
  await_worker(srv, "b-worker", "online");
  json any{{"worker", "any"}};
  std::vector<std::string> ids;
  std::vector<std::string> keys;
  for (int i = 0; i < 6; ++i) {
    ids.push_back(srv.submit_ok(endless_for(any)));
    if (i < 5) {
      srv.await_status(ids.back(), "running");
      keys.push_back(srv.get_json("/api/runs/" + ids.back())["queue_key"].get<std::string>());
    }
  }
  BOOST_TEST(keys == (std::vector<std::string>{"a-worker/sim:0", "a-worker/sim:1", "b-worker/sim:0",
                                               "b-worker/sim:1", "sim:0"}));
  auto waiting = srv.get_json("/api/runs/" + ids[5]);
  BOOST_TEST(waiting["status"] == "queued");
  BOOST_TEST(waiting["queue_key"] == "any");
  BOOST_TEST(waiting["queue_position"] == 1);
  BOOST_TEST(waiting["waiting_reason"] == "waits for a free sim slot: every one is busy");
  srv.cancel(ids[2]);  // b-worker/sim:0 frees: the waiting run takes it
  srv.await_status(ids[5], "running");
  BOOST_TEST(srv.get_json("/api/runs/" + ids[5])["queue_key"] == "b-worker/sim:0");
  for (const auto& id : ids)
    srv.cancel(id);
  for (const auto& id : ids)
    srv.wait_final(id);

  // A draining worker is passed over.
  BOOST_TEST(srv.client().Post("/api/workers/a-worker/drain", srv.auth(), "", "application/json")->status == 200);
  await_worker(srv, "a-worker", "draining");
  auto placed = srv.submit_ok(endless_for(any));
  srv.await_status(placed, "running");
  BOOST_TEST(srv.get_json("/api/runs/" + placed)["queue_key"] == "b-worker/sim:0");
  srv.cancel(placed);
  srv.wait_final(placed);

  auto none = srv.submit(endless_for(any, "cuda"));
  BOOST_TEST(none->status == 400);
  BOOST_TEST(none->body.find("neither this server nor a worker that has connected since it started "
                             "offers a cuda device") != std::string::npos, none->body);
  auto no_pool = srv.submit(endless_for({{"pool", "one-shot"}}));
  BOOST_TEST(no_pool->status == 400);
  BOOST_TEST(no_pool->body.find("no one-shot worker") != std::string::npos, no_pool->body);
}

BOOST_AUTO_TEST_CASE(the_one_shot_pool_runs_on_a_one_shot_worker_which_then_exits) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  auto regular = start_agent(home, "regular");
  cdui::test::process once{{CDUI_BINARY, "agent", "start", "--foreground", "--name", "once", "--one-shot"},
                           {{"CODEFYUI_HOME", home.path().string()}, {"CODEFYUI_SIM_DEVICES", "1x1GiB"}}};
  await_worker(srv, "regular", "online");
  await_worker(srv, "once", "online");
  auto body = moons_on("unused", {"sim:0"}, 1);
  // "once" comes first in name order, but a run that records its outputs never goes to an agent
  // that exits with them.
  body["options"] = {{"device", "sim"}, {"target", {{"worker", "any"}}}, {"record_outputs", true}};
  auto kept = srv.wait_final(srv.submit_ok(body));
  BOOST_TEST(kept["queue_key"] == "regular/sim:0", kept.dump());
  body["options"] = {{"target", {{"pool", "one-shot"}}}};
  auto id = srv.submit_ok(body);
  auto run = srv.wait_final(id);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  BOOST_TEST(run["queue_key"] == "once/sim:0");  // never the regular worker
  BOOST_TEST(run["options"]["target"]["pool"] == "one-shot");
  BOOST_TEST(once.wait_for(30s).value_or(-1) == 0);
}

BOOST_AUTO_TEST_CASE(a_one_shot_agent_exits_after_its_run) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  cdui::test::process agent{{CDUI_BINARY, "agent", "start", "--foreground", "--name", "once", "--one-shot"},
                            {{"CODEFYUI_HOME", home.path().string()}, {"CODEFYUI_SIM_DEVICES", "1x1GiB"}}};
  BOOST_TEST(await_worker(srv, "once", "online")["one_shot"] == true);
  auto id = srv.submit_ok(moons_on("once", {"sim:0"}, 1));
  BOOST_TEST(srv.wait_final(id)["status"] == "succeeded");
  auto code = agent.wait_for(30s);
  BOOST_REQUIRE(code.has_value());
  BOOST_TEST(*code == 0);
}

json endless_on_card(const std::string& worker, const std::string& device = "sim:0") {
  auto g = moons_graph_json(1'000'000, 0, 16, std::nullopt);
  return worker.empty() ? json{{"graph", g}, {"options", {{"device", device}}}}
                        : body_on_worker(g, worker, {device});
}

/// The "shared" budgets of one of the worker's devices, as GET /api/workers shows them.
json shared_of(const server_process& srv, const std::string& name, const std::string& device) {
  auto w = worker(srv, name);  // named: a range over a temporary's member dangles
  for (const auto& d : w["devices"])
    if (d["name"] == device)
      return d["slots"]["shared"];
  return nullptr;
}

BOOST_AUTO_TEST_CASE(the_same_card_offered_twice_never_runs_two_at_once) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  // The server's sim:0 and w1's sim:0 stand for one physical card; w1 asks for 3 runs on it.
  auto env = fast_heartbeats;
  env["CODEFYUI_SIM_DEVICES"] = "1x1GiB@card-A";
  env["CODEFYUI_RUN_QUEUE_MAX_CONCURRENT"] = "w1/sim:0=3";
  server_process srv{home, env};
  auto agent = start_agent(home, "w1", "1x1GiB@card-A,1x1GiB");
  await_worker(srv, "w1", "online");
  auto shared = shared_of(srv, "w1", "sim:0");
  BOOST_REQUIRE(shared.size() == 1u);
  BOOST_TEST(shared[0]["with"] == json::array({"sim:0"}));
  BOOST_TEST(shared[0]["limit"] == 1);  // the smallest limit among the offerers: the server's
  BOOST_TEST(shared_of(srv, "w1", "sim:1").empty());  // its own card
  std::ifstream log{home.path() / "server.log"};
  std::string text{std::istreambuf_iterator<char>{log}, {}};
  BOOST_TEST(text.find("w1/sim:0: its limit of 3 runs is lowered to 1") != std::string::npos);

  auto local = srv.submit_ok(endless_on_card(""));
  srv.await_status(local, "running");
  auto remote = srv.submit_ok(endless_on_card("w1"));
  auto other_card = srv.submit_ok(endless_on_card("w1", "sim:1"));
  srv.await_status(other_card, "running");  // the worker's other card is free
  auto listing = workers_listing(home);
  BOOST_TEST(listing.find("sim:0 0/3 (same card as sim:0 of this server: 1/1), sim:1 1/1")
             != std::string::npos, listing);
  // Judged at its submit, in the queue's handler: what the queue answers now is that.
  auto waiting = srv.get_json("/api/runs/" + remote);
  BOOST_TEST(waiting["status"] == "queued", waiting.dump());
  BOOST_TEST(waiting["queue_key"] == "w1/sim:0");
  // A run for any worker passes over the card too, whichever offerer it would go through.
  auto any = srv.submit_ok(endless_for({{"worker", "any"}}));
  BOOST_TEST(srv.get_json("/api/runs/" + any)["queue_key"] == "any");

  srv.cancel(local);
  srv.wait_final(local);
  srv.await_status(remote, "running");
  BOOST_TEST(srv.get_json("/api/runs/" + any)["status"] == "queued");
  for (const auto& id : {remote, other_card, any})
    srv.cancel(id);
  for (const auto& id : {remote, other_card, any})
    srv.wait_final(id);
}

BOOST_AUTO_TEST_CASE(a_same_host_worker_uses_the_servers_raised_limit_for_a_shared_card) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  auto env = fast_heartbeats;
  env["CODEFYUI_SIM_DEVICES"] = "1x1GiB@card-B";
  env["CODEFYUI_RUN_QUEUE_MAX_CONCURRENT"] = "sim:0=2";
  server_process srv{home, env};
  auto agent = start_agent(home, "w1", "1x1GiB@card-B");
  await_worker(srv, "w1", "online");
  BOOST_TEST(shared_of(srv, "w1", "sim:0")[0]["limit"] == 2);
  auto a = srv.submit_ok(endless_on_card(""));
  auto b = srv.submit_ok(endless_on_card(""));
  srv.await_status(a, "running");
  srv.await_status(b, "running");
  auto remote = srv.submit_ok(endless_on_card("w1"));
  BOOST_TEST(srv.get_json("/api/runs/" + remote)["status"] == "queued");  // 2 on the card already
  srv.cancel(a);
  srv.await_status(remote, "running");  // one through each offerer, two on the card
  BOOST_TEST(shared_of(srv, "w1", "sim:0")[0]["running"] == 2);
  for (const auto& id : {b, remote})
    srv.cancel(id);
  for (const auto& id : {a, b, remote})
    srv.wait_final(id);
}

BOOST_AUTO_TEST_CASE(a_worker_runs_recorded_outputs_stay_there_and_are_read_while_it_is_connected) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  auto agent = start_agent(home, "w1");
  await_worker(srv, "w1", "online");
  auto body = moons_on("w1", {"sim:0"});
  body["options"]["record_outputs"] = true;
  auto id = srv.submit_ok(body);
  BOOST_TEST(srv.wait_final(id)["status"] == "succeeded");
  BOOST_TEST(std::filesystem::exists(home.path() / "agents" / "w1" / "runs" / id / "outputs.json"));
  auto res = srv.client().Get(("/api/runs/" + id + "/outputs").c_str());
  BOOST_REQUIRE(res->status == 200);
  auto remote = json::parse(res->body);
  BOOST_TEST(remote["worker"] == "w1");
  // The same graph recorded on this server describes the same nodes, ports and kinds.
  auto local_body = moons_on("local", {"cpu"});
  local_body["options"] = {{"record_outputs", true}, {"seed", 1}};
  auto local_id = srv.submit_ok(local_body);
  BOOST_TEST(srv.wait_final(local_id)["status"] == "succeeded");
  auto local = json::parse(srv.client().Get(("/api/runs/" + local_id + "/outputs").c_str())->body);
  BOOST_REQUIRE(local["nodes"].size() == remote["nodes"].size());
  BOOST_TEST(!local["nodes"].empty());
  for (const auto& [node, ports] : local["nodes"].items())
    for (const auto& [port, described] : ports.items())
      BOOST_TEST(remote["nodes"][node][port]["kind"] == described["kind"], node + "." + port);

  // Away, the worker cannot be asked: 503, naming it.
  agent->signal(SIGTERM);
  BOOST_REQUIRE(agent->wait_for(30s).has_value());
  await_worker(srv, "w1", "disconnected");
  auto away = srv.client().Get(("/api/runs/" + id + "/outputs").c_str());
  BOOST_TEST(away->status == 503);
  BOOST_TEST(away->body.find("worker 'w1' is not connected") != std::string::npos, away->body);

  // A one-shot agent exits with its run, and its outputs with it.
  auto pool = endless_for({{"pool", "one-shot"}});
  pool["options"]["record_outputs"] = true;
  auto refused = srv.submit(pool);
  BOOST_TEST(refused->status == 400);
  BOOST_TEST(refused->body.find("a one-shot worker exits when its run ends") != std::string::npos,
             refused->body);
}

BOOST_AUTO_TEST_CASE(any_without_a_device_kind_is_refused_where_no_accelerator_is_offered) {
  cdui::test::temp_home home;
  server_process srv{home, {{"CODEFYUI_SIM_DEVICES", ""}}};  // this server offers its CPU only
  auto body = endless_for({{"worker", "any"}});
  body["options"].erase("device");
  auto refused = srv.submit(body);
  BOOST_TEST(refused->status == 400);
  BOOST_TEST(json::parse(refused->body)["detail"].get<std::string>().find(
               "offers an accelerator (give option 'device' \"cpu\" for a CPU slot)")
               != std::string::npos, refused->body);
  body["options"]["device"] = "cpu";
  auto id = srv.submit_ok(body);
  srv.await_status(id, "running");
  BOOST_TEST(srv.get_json("/api/runs/" + id)["queue_key"] == "cpu");
  srv.cancel(id);
  srv.wait_final(id);
  auto interactive = srv.submit({{"graph", body["graph"]},
                                 {"options", {{"lane", "interactive"}, {"target", {{"pool", "one-shot"}}}}}});
  BOOST_TEST(interactive->body.find("queue it to run in the one-shot pool") != std::string::npos,
             interactive->body);
}

BOOST_AUTO_TEST_CASE(agent_list_and_stop_and_a_stopped_agent_shows_disconnected_at_once) {
  cdui::test::temp_home home;
  // Heartbeats every 10 s: without its goodbye, a stopped agent would stay online 20-30 s more.
  server_process srv{home};
  auto a1 = start_agent(home, "a1");
  auto a2 = start_agent(home, "a2");
  await_worker(srv, "a1", "online");
  await_worker(srv, "a2", "online");
  auto metrics = srv.client().Get("/metrics")->body;
  BOOST_TEST(metrics.find("cdui_worker_heartbeat_age_seconds{worker=\"a1\"} ") != std::string::npos);

  auto listed = run_cdui(home, {"agent", "list"}, 30s);
  BOOST_TEST(listed.code == 0, listed.err);
  BOOST_TEST(listed.out.find("NAME") != std::string::npos, listed.out);
  for (const auto& [name, agent] : {std::pair{"a1", a1.get()}, std::pair{"a2", a2.get()}}) {
    auto line = listed.out.substr(listed.out.find(std::string{name} + " "));
    line = line.substr(0, line.find('\n'));
    BOOST_TEST(line.find(std::to_string(agent->pid())) != std::string::npos, line);
    BOOST_TEST(line.find(srv.zmq_endpoint() + " (this home's server)") != std::string::npos, line);
    BOOST_TEST(line.find(" ago") != std::string::npos, line);
  }
  // Without a name, with two running: which one is for the operator to say.
  auto several = run_cdui(home, {"agent", "stop"}, 30s);
  BOOST_TEST(several.code == 2);
  BOOST_TEST(several.err.find("2 agents run on") != std::string::npos, several.err);
  BOOST_TEST(several.out.find("a1") != std::string::npos, several.out);
  BOOST_TEST(several.out.find("a2") != std::string::npos, several.out);

  auto stopped = run_cdui(home, {"agent", "stop", "a1"}, 60s);
  BOOST_TEST(stopped.code == 0, stopped.err);
  BOOST_TEST(a1->wait_for(10s).value_or(-1) == 0);
  // Far within the 20-30 s its missed heartbeats would take.
  auto gone = await_worker(srv, "a1", "disconnected", 5s);
  BOOST_TEST(gone["reason"].get<std::string>().find("its agent stopped") != std::string::npos,
             gone.dump());
  BOOST_TEST(worker(srv, "a2")["status"] == "online");

  auto last = run_cdui(home, {"agent", "stop"}, 60s);  // the only one left
  BOOST_TEST(last.code == 0, last.err);
  BOOST_TEST(last.out.find("cdui agent 'a2' stopped") != std::string::npos, last.out);
  await_worker(srv, "a2", "disconnected", 5s);
  auto none = run_cdui(home, {"agent", "list"}, 30s);
  BOOST_TEST(none.out.find("no agent is running") != std::string::npos, none.out);
}

BOOST_AUTO_TEST_CASE(a_target_without_devices_takes_the_workers_idle_card_not_the_busy_first_one) {
  cdui::test::temp_home home;
  run_process_guard guard{home};
  server_process srv{home, fast_heartbeats};
  auto agent = start_agent(home, "w1");  // sim:0 and sim:1
  await_worker(srv, "w1", "online");
  auto on_w1 = [](int epochs) {  // --target w1, no --devices
    return json{{"graph", moons_graph_json(epochs, 0, 16, std::nullopt)},
                {"options", {{"seed", 1}, {"target", {{"worker", "w1"}}}}}};
  };
  auto busy = srv.submit_ok(on_w1(1'000'000));
  srv.await_status(busy, "running");
  BOOST_TEST(srv.get_json("/api/runs/" + busy)["queue_key"] == "w1/sim:0");
  // --target w1 alone: sim:0 is busy, sim:1 idle, so it goes to sim:1 instead of waiting.
  auto second = srv.submit_ok(on_w1(1));
  BOOST_TEST(srv.get_json("/api/runs/" + second)["queue_key"] == "w1/sim:1");
  auto done = srv.wait_final(second);
  BOOST_TEST(done["status"] == "succeeded", done.dump());
  BOOST_TEST(srv.get_json("/api/runs/" + busy)["status"] == "running");
  srv.cancel(busy);
  BOOST_TEST(srv.wait_final(busy)["status"] == "cancelled");
}

BOOST_AUTO_TEST_CASE(a_detached_run_whose_cuda_fell_back_says_so_and_names_a_worker_offering_cuda) {
  cdui::test::temp_home home;
  server_process srv{home};  // heartbeats every 10 s: the hand-made peer stays online meanwhile
  for (const auto& d : srv.get_json("/api/devices")["devices"])
    if (d["device"].get<std::string>().rfind("cuda", 0) == 0) {
      BOOST_TEST_MESSAGE("this machine has CUDA: no fallback to see");
      return;
    }
  auto graph = home.path() / "moons.json";
  std::ofstream{graph} << moons_graph_json(1, 0, 16, std::nullopt).dump();
  auto detached = run_cdui(home, {"run", graph.string(), "--device", "cuda", "--detach"});
  BOOST_TEST(detached.code == 0, detached.err);
  BOOST_TEST(detached.out.find("warning (device_fallback): device cuda was requested, but this "
                               "machine has no cuda device, so it runs on cpu.")
               != std::string::npos,
             detached.out);
  BOOST_TEST(detached.out.find("--target") == std::string::npos, detached.out);

  // A connected worker that offers cuda: the warning names it.
  raw_peer peer{zmq_endpoint(home)};
  peer.send(cdui::wire::message_type::hello,
            make_hello("gpu-box", token_of(home),
                       {{"cpu", "cpu", "cpu-gpu-box", 1LL << 30, 1LL << 30},
                        {"cuda:0", "cuda", "GPU-test-0", 16LL << 30, 16LL << 30}},
                       srv.get_json("/api/workers")["node_types_digest"].get<std::string>()));
  auto welcome = peer.receive(10s);
  BOOST_REQUIRE(welcome.has_value());
  BOOST_TEST((welcome->first == cdui::wire::message_type::welcome));
  await_worker(srv, "gpu-box", "online");
  auto named = run_cdui(home, {"run", graph.string(), "--device", "cuda", "--detach"});
  BOOST_TEST(named.code == 0, named.err);
  BOOST_TEST(named.out.find("Worker 'gpu-box' offers cuda: submit with --target gpu-box")
               != std::string::npos,
             named.out);

  // The device asked for beside the one it got: in the run object and in `cdui runs`.
  auto runs = srv.get_json("/api/runs");
  BOOST_REQUIRE(runs["runs"].size() == 2u);
  for (const auto& r : runs["runs"]) {
    BOOST_TEST(r["device_requested"] == "cuda");
    BOOST_TEST(r["queue_key"] == "cpu");
  }
  auto listing = run_cdui(home, {"runs"}, 30s);
  BOOST_TEST(listing.out.find("cpu (asked cuda)") != std::string::npos, listing.out);
}

BOOST_AUTO_TEST_SUITE_END()
