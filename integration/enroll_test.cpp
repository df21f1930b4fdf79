// Remote workers: enrollment over HTTP, agents that join with their credential (each on a home of
// its own, as on another machine, but on 127.0.0.1), re-key, remove, and the CURVE-encrypted wire.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include "devices/device.hpp"
#include "integration/worker_helpers.hpp"
#include "testkit/wait.hpp"

using namespace std::chrono_literals;
using namespace cdui::test;
using nlohmann::json;

namespace {

/// Degraded after 2 s without a heartbeat, Disconnected after 3 s: slow enough for a busy machine.
const std::map<std::string, std::string> steady_heartbeats{{"CODEFYUI_WORKER_HEARTBEAT_S", "1"}};

httplib::Result post(const server_process& srv, const std::string& path, const json& body,
                     bool with_token = true) {
  return srv.client().Post(path.c_str(), with_token ? srv.auth() : httplib::Headers{}, body.dump(),
                           "application/json");
}

json enroll(const server_process& srv, const std::string& name) {
  auto res = post(srv, "/api/workers/enroll", {{"name", name}});
  BOOST_REQUIRE(res);
  BOOST_REQUIRE_MESSAGE(res->status == 200, res->body);
  return json::parse(res->body);
}

/// A remote agent in the foreground, on a home of its own, with its credential in a file there.
std::unique_ptr<process> remote_agent(const temp_home& agent_home, const std::string& name,
                                      const std::string& server, const std::string& credential,
                                      const std::string& server_key = "") {
  auto file = agent_home.path() / (name + ".credential");
  std::ofstream{file} << credential << "\n";
  std::vector<std::string> args{"agent", "start", "--foreground", "--name", name,
                                "--server", server, "--credential", file.string()};
  if (!server_key.empty()) {
    args.push_back("--server-key");
    args.push_back(server_key);
  }
  return start_cdui(args, {{"CODEFYUI_HOME", agent_home.path().string()},
                           {"CODEFYUI_SIM_DEVICES", "2x1GiB"}});
}

/// Runs the enrollment's command as an operator would paste it, in `agent_home` (the other
/// machine), with cdui on the PATH. The agent it starts runs in the background; the guard stops it.
int run_enrollment_command(const temp_home& agent_home, const std::string& command) {
  auto bin = std::filesystem::path{CDUI_BINARY}.parent_path().string();
  process shell{{"/bin/bash", "-c", "cd '" + agent_home.path().string() + "' && " + command},
                {{"CODEFYUI_HOME", agent_home.path().string()},
                 {"CODEFYUI_SIM_DEVICES", "2x1GiB"},
                 {"PATH", bin + ":" + std::getenv("PATH")}}};
  auto code = shell.wait_for(60s);
  BOOST_TEST_MESSAGE("enrollment command: " << shell.out() << shell.err());
  return code.value_or(-1);
}

/// Stops the background agent of `name` on `agent_home` by its pid, and the runs it left.
struct background_agent_guard {
  const temp_home& agent_home;
  std::string name;
  ~background_agent_guard() {
    if (auto pid = signal_pid_in(agent_home.path() / "agents" / name / "agent.json", SIGTERM)) {
      if (!eventually([&] { return ::kill(*pid, 0) != 0; }, 10s))
        ::kill(*pid, SIGKILL);
    }
    for (auto pid : run_processes(agent_home))
      ::kill(pid, SIGKILL);
  }
};

json long_run_on(const std::string& worker) {
  return body_on_worker(moons_graph_json(1'000'000, 0, 16, std::nullopt), worker, {"sim:0"});
}

} // namespace

BOOST_AUTO_TEST_SUITE(enroll_test)

BOOST_AUTO_TEST_CASE(the_enrollment_command_starts_a_remote_agent_that_runs_a_run) {
  temp_home home;
  temp_home agent_home;
  server_process srv{home, steady_heartbeats};

  auto no_token = post(srv, "/api/workers/enroll", {{"name", "remote-1"}}, false);
  BOOST_TEST(no_token->status == 403);
  auto bad_name = post(srv, "/api/workers/enroll", {{"name", "../escape"}});
  BOOST_TEST(bad_name->status == 400);
  BOOST_TEST(bad_name->body.find("field 'name': '../escape' is not a worker name") != std::string::npos,
             bad_name->body);
  auto bad_field = post(srv, "/api/workers/enroll", {{"name", "x"}, {"host", "a"}});
  BOOST_TEST(bad_field->status == 400);
  BOOST_TEST(bad_field->body.find("field 'host' is not known") != std::string::npos, bad_field->body);
  auto injected = post(srv, "/api/workers/enroll", {{"name", "x"}, {"server_host", "a;rm -rf ~"}});
  BOOST_TEST(injected->status == 400);

  auto e = enroll(srv, "remote-1");
  auto zmq = zmq_endpoint(home);
  BOOST_TEST(e["server"] == zmq);
  BOOST_TEST(e["credential"].get<std::string>().rfind("cdui-wk-", 0) == 0u);
  BOOST_TEST(e["server_public_key"].is_null());  // loopback: not encrypted
  BOOST_TEST(e["warning"].get<std::string>().find("which no other machine can reach") != std::string::npos);
  auto command = e["command"].get<std::string>();
  BOOST_TEST(command.find("cdui agent start --name remote-1 --server " + zmq
                          + " --credential remote-1.credential") != std::string::npos, command);
  auto again = post(srv, "/api/workers/enroll", {{"name", "remote-1"}});
  BOOST_TEST(again->status == 409);
  BOOST_TEST(again->body.find("enrolled already") != std::string::npos, again->body);

  // cdui.db keeps the credential's hash, never the credential.
  auto credential = e["credential"].get<std::string>();
  std::string db;
  for (const auto& entry : std::filesystem::directory_iterator{home.path()})
    if (entry.path().filename().string().rfind("cdui.db", 0) == 0)
      db += file_text(entry.path());
  BOOST_TEST(db.find(credential) == std::string::npos);
  BOOST_TEST(db.find("remote-1") != std::string::npos);

  BOOST_TEST(workers_listing(home).find("enrolled, not connected: remote-1") != std::string::npos);
  background_agent_guard guard{agent_home, "remote-1"};
  BOOST_TEST(run_enrollment_command(agent_home, command) == 0);
  struct stat st {};
  BOOST_REQUIRE(::stat((agent_home.path() / "remote-1.credential").c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  auto w = await_worker(srv, "remote-1", "online");
  BOOST_TEST(w["credential"] == "enrolled");
  auto listing = srv.get_json("/api/workers");
  BOOST_TEST(listing["enrolled"][0]["name"] == "remote-1");
  BOOST_TEST(listing["enrolled"][0]["connected"] == true);

  auto id = srv.submit_ok(moons_on("remote-1", {"sim:1"}));
  auto run = srv.wait_final(id);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  BOOST_TEST(run["queue_key"] == "remote-1/sim:1");
  // The run's folder is on the worker's own home.
  BOOST_TEST(std::filesystem::exists(agent_home.path() / "agents" / "remote-1" / "runs" / id));
}

BOOST_AUTO_TEST_CASE(a_rekey_ends_the_old_credential_and_remove_fails_the_workers_runs) {
  temp_home home;
  temp_home agent_home;
  temp_home other_home;
  run_process_guard guard{agent_home};
  server_process srv{home, steady_heartbeats};
  auto zmq = zmq_endpoint(home);
  auto first = enroll(srv, "remote-2")["credential"].get<std::string>();
  auto agent = remote_agent(agent_home, "remote-2", zmq, first);
  await_worker(srv, "remote-2", "online");

  // A stranger's guess and a name nobody enrolled.
  auto stranger = remote_agent(other_home, "stranger", zmq, "cdui-wk-guess");
  BOOST_REQUIRE(stranger->wait_for(30s).has_value());
  BOOST_TEST(stranger->err().find("no worker named 'stranger' is enrolled") != std::string::npos,
             stranger->err());

  BOOST_TEST(post(srv, "/api/workers/remote-2/rekey", {{"name", "x"}})->status == 400);
  auto rekeyed = post(srv, "/api/workers/remote-2/rekey", {{"server_host", "gpu.lab"}});
  BOOST_REQUIRE(rekeyed->status == 200);
  auto port = zmq.substr(zmq.rfind(':') + 1);
  BOOST_TEST(json::parse(rekeyed->body)["server"] == "tcp://gpu.lab:" + port);
  auto second = json::parse(rekeyed->body)["credential"].get<std::string>();
  BOOST_TEST(second != first);
  BOOST_TEST(post(srv, "/api/workers/nobody/rekey", json::object())->status == 404);
  // The connection that joined with the old credential stays; a new one with it is refused.
  // Heartbeats go on after the re-key: two more arrive (the heartbeat's age falls back twice).
  int heartbeats = 0;
  double age = worker(srv, "remote-2")["heartbeat_age_s"].get<double>();
  BOOST_TEST(eventually([&] {
    double now = worker(srv, "remote-2")["heartbeat_age_s"].get<double>();
    heartbeats += now < age;
    age = now;
    return heartbeats >= 2;
  }, 30s));
  BOOST_TEST(worker(srv, "remote-2")["status"] != "disconnected");
  auto old = remote_agent(other_home, "remote-2", zmq, first);
  auto old_code = old->wait_for(30s);
  BOOST_REQUIRE(old_code.has_value());
  BOOST_TEST(*old_code == 1);
  BOOST_TEST(old->err().find("not the one its latest enrollment or re-key gave") != std::string::npos,
             old->err());
  auto refused = srv.get_json("/api/workers")["refused_connections"];
  BOOST_TEST(refused.size() == 2u);

  // One run executing on it, one waiting: removal fails both and disconnects the agent.
  auto running = srv.submit_ok(long_run_on("remote-2"));
  srv.await_status(running, "running");
  auto waiting = srv.submit_ok(long_run_on("remote-2"));
  BOOST_TEST(srv.get_json("/api/runs/" + waiting)["status"] == "queued");
  auto removed = srv.client().Delete("/api/workers/remote-2", srv.auth());
  BOOST_REQUIRE(removed->status == 200);
  for (const auto& id : {running, waiting}) {
    auto run = srv.wait_final(id, 30s);
    BOOST_TEST(run["status"] == "failed");
    BOOST_TEST(run["error"] == "worker 'remote-2' was removed by an operator", run.dump());
  }
  auto code = agent->wait_for(30s);
  BOOST_REQUIRE(code.has_value());
  BOOST_TEST(*code == 1);
  BOOST_TEST(agent->err().find("was removed by an operator") != std::string::npos, agent->err());
  BOOST_TEST(eventually([&] { return run_processes(agent_home).empty(); }, 30s));  // its run's process was stopped there
  BOOST_TEST(worker(srv, "remote-2").is_null());
  BOOST_TEST(srv.get_json("/api/workers")["enrolled"].empty());
  auto after = srv.submit(long_run_on("remote-2"));
  BOOST_TEST(after->status == 400, after->body);
  BOOST_TEST(srv.client().Delete("/api/workers/remote-2", srv.auth())->status == 404);
  // The newest credential is revoked too.
  auto revoked = remote_agent(other_home, "remote-2", zmq, second);
  BOOST_REQUIRE(revoked->wait_for(30s).has_value());
  BOOST_TEST(revoked->err().find("no worker named 'remote-2' is enrolled") != std::string::npos,
             revoked->err());
}

BOOST_AUTO_TEST_CASE(removing_an_away_worker_fails_its_runs_and_its_agent_stops_them_on_return) {
  temp_home home;
  temp_home agent_home;
  run_process_guard guard{agent_home};
  auto srv = std::make_unique<server_process>(home, steady_heartbeats);
  auto zmq = zmq_endpoint(home);
  auto credential = enroll(*srv, "w-away")["credential"].get<std::string>();
  auto agent = remote_agent(agent_home, "w-away", zmq, credential);
  await_worker(*srv, "w-away", "online");
  auto running = srv->submit_ok(long_run_on("w-away"));
  srv->await_status(running, "running");
  BOOST_REQUIRE(eventually([&] { return !run_processes(agent_home).empty(); }, 60s));
  agent->signal(SIGKILL);  // its run's process goes on, in a session of its own
  agent->wait_for(10s);
  await_worker(*srv, "w-away", "disconnected");
  auto waiting = srv->submit_ok(long_run_on("w-away"));  // it connected since the start: it waits
  BOOST_REQUIRE(srv->client().Delete("/api/workers/w-away", srv->auth())->status == 200);
  for (const auto& id : {running, waiting})
    BOOST_TEST(srv->wait_final(id, 30s)["error"] == "worker 'w-away' was removed by an operator");
  // Back with its run still going: refused, and the run it kept stops.
  auto back = remote_agent(agent_home, "w-away", zmq, credential);
  BOOST_REQUIRE(back->wait_for(30s).has_value());
  BOOST_TEST(back->err().find("no worker named 'w-away' is enrolled") != std::string::npos, back->err());
  BOOST_TEST(eventually([&] { return run_processes(agent_home).empty(); }, 30s));

  // A worker that has not come back since a restart: the runs queued for it before fail too.
  credential = enroll(*srv, "w-late")["credential"].get<std::string>();
  agent = remote_agent(agent_home, "w-late", zmq, credential);
  await_worker(*srv, "w-late", "online");
  BOOST_REQUIRE(post(*srv, "/api/workers/w-late/drain", json::object())->status == 200);
  auto queued = srv->submit_ok(long_run_on("w-late"));
  agent->signal(SIGTERM);
  agent->wait_for(30s);
  srv->proc().signal(SIGKILL);
  srv->proc().wait_for(10s);
  srv = std::make_unique<server_process>(home, steady_heartbeats);
  BOOST_TEST(srv->get_json("/api/runs/" + queued)["status"] == "queued");
  BOOST_TEST(srv->get_json("/api/workers")["enrolled"][0]["name"] == "w-late");  // from cdui.db
  BOOST_REQUIRE(srv->client().Delete("/api/workers/w-late", srv->auth())->status == 200);
  BOOST_TEST(srv->wait_final(queued, 30s)["error"] == "worker 'w-late' was removed by an operator");
}

BOOST_AUTO_TEST_CASE(cdui_workers_enrolls_rekeys_drains_and_removes_a_worker) {
  temp_home home;
  temp_home agent_home;
  run_process_guard guard{agent_home};
  server_process srv{home, steady_heartbeats};
  auto r = run_cdui(home, {"workers", "enroll", "gpu-x", "--server-host", "gpu.lab"});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out.find("worker 'gpu-x' enrolled") != std::string::npos, r.out);
  auto zmq = zmq_endpoint(home);
  BOOST_TEST(r.out.find("cdui agent start --name gpu-x --server tcp://gpu.lab:" + zmq.substr(zmq.rfind(':') + 1))
             != std::string::npos, r.out);
  BOOST_TEST(r.err.find("warning: this server takes agents on") != std::string::npos, r.err);
  r = run_cdui(home, {"workers", "enroll", "gpu-x"});
  BOOST_TEST(r.code == 1);
  // The CLI's words, not the HTTP path.
  BOOST_TEST(r.err.find("enrolled already; re-key it with `cdui workers rekey gpu-x`") != std::string::npos,
             r.err);
  r = run_cdui(home, {"workers", "enroll", "../x"});
  BOOST_TEST(r.code == 2);

  r = run_cdui(home, {"workers", "rekey", "gpu-x"});
  BOOST_TEST(r.code == 0, r.err);
  auto start = r.out.find("cdui-wk-");
  BOOST_REQUIRE(start != std::string::npos);
  auto agent = remote_agent(agent_home, "gpu-x", zmq, r.out.substr(start, 8 + 64));
  await_worker(srv, "gpu-x", "online");

  r = run_cdui(home, {"workers", "drain", "gpu-x"});
  BOOST_TEST(r.code == 0, r.err);
  await_worker(srv, "gpu-x", "draining");
  r = run_cdui(home, {"workers", "undrain", "gpu-x"});
  BOOST_TEST(r.code == 0, r.err);
  await_worker(srv, "gpu-x", "online");

  r = run_cdui(home, {"workers", "remove", "gpu-x"});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out.find("worker 'gpu-x' removed") != std::string::npos, r.out);
  BOOST_REQUIRE(agent->wait_for(30s).has_value());
  r = run_cdui(home, {"workers", "remove", "gpu-x"});
  BOOST_TEST(r.code == 1);
  BOOST_TEST(r.err.find("no worker named 'gpu-x'") != std::string::npos, r.err);
}

BOOST_AUTO_TEST_CASE(a_fleets_one_credential_joins_each_member_and_removing_the_fleet_removes_them) {
  temp_home home;
  temp_home first_home;
  temp_home second_home;
  temp_home pasted_home;
  temp_home other_home;
  run_process_guard first_runs{first_home};
  server_process srv{home, steady_heartbeats};
  auto zmq = zmq_endpoint(home);

  auto r = run_cdui(home, {"workers", "enroll", "lab-*"});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out.find("fleet 'lab-*' enrolled; on each of its machines, run") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("cdui agent start --name lab-\"$(hostname -s)\" --server " + zmq
                        + " --credential lab-fleet.credential") != std::string::npos, r.out);
  BOOST_TEST(post(srv, "/api/workers/enroll", {{"name", "lab-*"}})->status == 409);
  auto star = post(srv, "/api/workers/enroll", {{"name", "*"}});
  BOOST_TEST(star->status == 400);
  BOOST_TEST(star->body.find("is not a worker name or a fleet's pattern") != std::string::npos, star->body);
  BOOST_TEST(run_cdui(home, {"workers", "drain", "lab-*"}).code == 2);  // drains are each worker's

  auto start = r.out.find("cdui-wk-");
  BOOST_REQUIRE(start != std::string::npos);
  auto credential = r.out.substr(start, 8 + 64);
  // Two machines join with the one credential, each under its own name.
  auto first = remote_agent(first_home, "lab-a", zmq, credential);
  auto second = remote_agent(second_home, "lab-b", zmq, credential);
  BOOST_TEST(await_worker(srv, "lab-a", "online")["credential"] == "enrolled");
  BOOST_TEST(await_worker(srv, "lab-b", "online")["credential"] == "enrolled");
  auto listing = srv.get_json("/api/workers");
  BOOST_REQUIRE(listing["enrolled"].size() == 1u);
  BOOST_TEST(listing["enrolled"][0]["name"] == "lab-*");
  BOOST_TEST(listing["enrolled"][0]["connected"] == true);
  // The command as an operator pastes it on a third machine: it joins as lab-<its host name>.
  auto command = post(srv, "/api/workers/lab-*/rekey", json::object());
  BOOST_REQUIRE(command->status == 200);
  auto host = cdui::devices::host_name();
  auto pasted = "lab-" + host.substr(0, host.find('.'));
  background_agent_guard pasted_agent{pasted_home, pasted};
  BOOST_TEST(run_enrollment_command(pasted_home, json::parse(command->body)["command"].get<std::string>()) == 0);
  await_worker(srv, pasted, "online");
  // The re-key ended the old credential for a new member; the members joined with it stay.
  auto late = remote_agent(other_home, "lab-late", zmq, credential);
  BOOST_REQUIRE(late->wait_for(30s).has_value());
  BOOST_TEST(late->err().find("of its fleet 'lab-*' gave") != std::string::npos, late->err());
  // Outside its prefix, the credential is nobody's.
  auto outsider = remote_agent(other_home, "gpu-box", zmq, credential);
  BOOST_REQUIRE(outsider->wait_for(30s).has_value());
  BOOST_TEST(outsider->err().find("no worker named 'gpu-box' is enrolled") != std::string::npos, outsider->err());

  auto id = srv.submit_ok(moons_on("lab-b", {"sim:0"}));
  BOOST_TEST(srv.wait_final(id)["status"] == "succeeded");
  auto running = srv.submit_ok(long_run_on("lab-a"));
  srv.await_status(running, "running");

  // Removing the fleet removes each member: their runs fail, their agents stop.
  r = run_cdui(home, {"workers", "remove", "lab-*"});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out.find("fleet 'lab-*' removed") != std::string::npos, r.out);
  auto ended = srv.wait_final(running, 30s);
  BOOST_TEST(ended["status"] == "failed");
  BOOST_TEST(ended["error"] == "worker 'lab-a' was removed by an operator, with its fleet 'lab-*'", ended.dump());
  for (auto* agent : {first.get(), second.get()}) {
    auto code = agent->wait_for(30s);
    BOOST_REQUIRE(code.has_value());
    BOOST_TEST(*code == 1);
    BOOST_TEST(agent->err().find("with its fleet 'lab-*'") != std::string::npos, agent->err());
  }
  BOOST_TEST(eventually([&] { return srv.get_json("/api/workers")["workers"].empty(); }, 30s));
  BOOST_TEST(srv.get_json("/api/workers")["enrolled"].empty());
  BOOST_TEST(srv.client().Delete("/api/workers/lab-*", srv.auth())->status == 404);
}

BOOST_AUTO_TEST_CASE(with_curve_only_a_peer_that_knows_the_servers_key_is_heard) {
  temp_home home;
  temp_home agent_home;
  run_process_guard guard{agent_home};
  std::map<std::string, std::string> env = steady_heartbeats;
  env["CODEFYUI_ZMQ_CURVE"] = "on";
  std::string key;
  {
    server_process srv{home, env};
    std::ifstream in{home.path() / "server.json"};
    key = json::parse(in)["zmq_public_key"].get<std::string>();
    BOOST_TEST(key.size() == 40u);
    struct stat st {};
    BOOST_REQUIRE(::stat((home.path() / "server.curve").c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 0777) == 0600u);
    BOOST_TEST(bridge_state(srv)["encrypted"] == true);

    // In the clear, a hello with the right token gets no answer: the handshake never completes.
    raw_peer plain{zmq_endpoint(home)};
    plain.send(cdui::wire::message_type::hello, good_hello(home, "plain"));
    BOOST_TEST(!plain.receive(2s).has_value());
    raw_peer encrypted{zmq_endpoint(home), key};
    encrypted.send(cdui::wire::message_type::hello, good_hello(home, "encrypted"));
    auto answer = encrypted.receive(10s);
    BOOST_REQUIRE(answer.has_value());
    BOOST_TEST((answer->first == cdui::wire::message_type::welcome));
    BOOST_TEST(worker(srv, "plain").is_null());
  }
  // A damaged key file stops the start, naming it, rather than changing the key under the agents.
  auto keys = file_text(home.path() / "server.curve");
  std::ofstream{home.path() / "server.curve"} << keys.substr(0, 40) << "\n";
  try {
    server_process broken{home, env};
    BOOST_ERROR("a server started with a damaged server.curve");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string{e.what()}.find("server.curve does not hold a CURVE key pair")
               != std::string::npos, e.what());
  }
  std::ofstream{home.path() / "server.curve"} << keys;
  // The key pair outlives a restart, so enrollment commands stay valid.
  server_process srv{home, env};
  std::ifstream in{home.path() / "server.json"};
  BOOST_TEST(json::parse(in)["zmq_public_key"] == key);

  // An agent that does not know the key gets no answer; after 20 s it says what to check.
  temp_home keyless_home;
  auto keyless = remote_agent(keyless_home, "keyless", zmq_endpoint(home), "cdui-wk-unheard");
  auto e = enroll(srv, "remote-c");
  BOOST_TEST(e["server_public_key"] == key);
  BOOST_TEST(e["command"].get<std::string>().find("--server-key '" + key + "'") != std::string::npos);
  auto agent = remote_agent(agent_home, "remote-c", zmq_endpoint(home),
                            e["credential"].get<std::string>(), key);
  // A same-host agent finds the key in server.json.
  run_process_guard local_guard{home};
  auto local = start_agent(home, "same-host");
  await_worker(srv, "remote-c", "online");
  await_worker(srv, "same-host", "online");
  auto id = srv.submit_ok(moons_on("remote-c", {"sim:0"}));
  auto run = srv.wait_final(id);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  eventually([&] { return keyless->err().find("no answer from") != std::string::npos; }, 40s);
  BOOST_TEST(keyless->err().find("a peer without its public key (--server-key") != std::string::npos,
             keyless->err());
  BOOST_TEST(worker(srv, "keyless").is_null());
  BOOST_TEST(srv.get_json("/api/workers")["refused_connections"].empty());  // never heard at all
}

BOOST_AUTO_TEST_SUITE_END()
