#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/agent/agent_actor.hpp"
#include "actors/agent/protocol.hpp"
#include "actors/common/zmq_socket_thread.hpp"
#include "messages/atoms.hpp"
#include "messages/version.hpp"
#include "messages/wire.hpp"
#include "messages/worker.hpp"
#include "testkit/home.hpp"
#include "testkit/wait.hpp"

// The agent's actors against a server played by hand: a ROUTER on a zmq_socket_thread of the
// test's own. The run's process is a shell script standing in for `cdui exec`.

using namespace cdui;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t gib = 1024LL * 1024 * 1024;

using test::eventually;

/// A run's process: it writes what it was given, then two events and an outcome; a run whose id
/// starts with "sleepy" instead waits until it is killed (a loop, so that a SIGKILL ends it), and
/// one whose id starts with "stubborn" too, ignoring SIGTERM.
constexpr const char* fake_exec = R"sh(#!/bin/sh
dir="$2"
printf '%s|%s\n' "$CODEFYUI_SIM_DEVICES" "$CUDA_VISIBLE_DEVICES" > "$dir/env.txt"
case "$(basename "$dir")" in
  sleepy*) while :; do sleep 0.05; done ;;
  stubborn*) trap '' TERM; while :; do sleep 0.05; done ;;
esac
printf '{"cursor":1,"time_ms":5,"type":"execution_start","data":{}}\n' >> "$dir/events.jsonl"
printf '{"cursor":2,"time_ms":6,"type":"execution_complete","data":{}}\n' >> "$dir/events.jsonl"
printf '{"status":"succeeded","error":"","final_metrics":{"loss":0.5}}' > "$dir/outcome.json"
)sh";

struct received {
  std::string identity;
  wire::message_type type;
  std::string payload;
};

/// The server's end, by hand: every message the agent sends, in order.
class fake_server {
public:
  fake_server() : socket_(setup()) {
    socket_.start([this](const actors::zmq_socket_thread::frames& parts) {
      if (parts.size() != 3)
        return;
      auto envelope = wire::decode_envelope(parts[1]);
      if (!std::holds_alternative<wire::envelope>(envelope))
        return;
      std::lock_guard lock{mutex_};
      inbox_.push_back({std::string{parts[0]}, std::get<wire::envelope>(envelope).type,
                        std::string{parts[2]}});
      arrived_.notify_all();
    });
  }

  [[nodiscard]] std::string endpoint() const { return socket_.endpoint(); }

  /// The first message of `type` not taken yet, decoded as T (messages of other types stay).
  template <class T>
  std::optional<T> next(wire::message_type type, std::chrono::milliseconds limit = 20s) {
    std::unique_lock lock{mutex_};
    auto is_type = [&](const received& m) { return m.type == type; };
    if (!arrived_.wait_for(lock, limit, [&] {
          return std::any_of(inbox_.begin(), inbox_.end(), is_type);
        }))
      return std::nullopt;
    auto i = std::find_if(inbox_.begin(), inbox_.end(), is_type);
    auto m = std::move(*i);
    inbox_.erase(i);
    identity_ = m.identity;
    return wire::decode<T>(m.payload);
  }

  /// Sends to the agent that sent the last message next() returned.
  template <class T>
  void send(wire::message_type type, const T& payload) {
    socket_.send({identity_, wire::encode_envelope({wire::protocol_version, type, 0, "server"}),
                  wire::encode(payload)});
  }

private:
  static actors::zmq_socket_setup setup() {
    actors::zmq_socket_setup s;
    s.type = actors::zmq_socket_setup::role::router;
    s.name = "fake server";
    s.bind = "tcp://127.0.0.1:0";
    return s;
  }

  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<received> inbox_;
  std::string identity_;
  actors::zmq_socket_thread socket_;
};

/// An agent actor named w1 with two sim cards, joined to a fake server.
struct agent_fixture {
  test::temp_home home;
  fake_server server;
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> system;
  std::unique_ptr<caf::scoped_actor> self;
  actors::agent_actor agent;

  agent_fixture() {
    auto script = home.path() / "fake-exec.sh";
    std::ofstream{script} << fake_exec;
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    std::ofstream{home.path() / "credential"} << "secret\n";
    cfg.set("scheduler.max-threads", std::size_t{2});
    cfg.set("logger.verbosity", caf::atom("quiet"));
    system = std::make_unique<caf::actor_system>(cfg);
    self = std::make_unique<caf::scoped_actor>(*system);
    actors::agent_setup s;
    s.name = "w1";
    s.home = home.path();
    s.offers = {actors::this_host_cpu_offer(),
                {"sim:0", "sim", "SIM-CARD-t-0", 1 * gib, 1 * gib},
                {"sim:1", "sim", "SIM-CARD-t-1", 2 * gib, 2 * gib}};
    s.environment = "test";
    s.server = server.endpoint();
    s.credential_file = home.path() / "credential";
    s.exec_binary = script;
    s.stop_deadline_ms = 1000;
    s.owner = *self;
    agent = system->spawn(actors::agent_connection, std::move(s));
    (*self)->monitor(agent);
  }

  ~agent_fixture() {
    (*self)->send(agent, atoms::stop::value);
    bool down = false;
    while (!down)
      (*self)->receive([&](const caf::down_msg&) { down = true; },
                       [&](atoms::ended, const std::string&, bool) {});
  }

  /// Waits for the hello and welcomes it (heartbeats every 50 ms).
  void join() {
    auto h = server.next<hello>(wire::message_type::hello);
    BOOST_REQUIRE(h);
    BOOST_TEST(h->name == "w1");
    BOOST_TEST(h->credential == "secret");
    BOOST_TEST(h->devices.size() == 3u);
    server.send(wire::message_type::welcome, welcome{version(), 50, {}, {}});
    BOOST_REQUIRE(server.next<heartbeat>(wire::message_type::heartbeat));
  }

  [[nodiscard]] std::filesystem::path run_dir(const std::string& id) const {
    return home.path() / "agents" / "w1" / "runs" / id;
  }

  void assign(const std::string& id, std::vector<std::string> devices, const std::string& graph = "{}") {
    server.send(wire::message_type::assign_run,
                assign_run{id, "test run", graph, "{}", std::move(devices), 7, {}});
  }

  /// The server has the run's end: the agent marks its folder `acked`, and its heartbeats no
  /// longer list it.
  void acknowledge(const std::string& id) {
    server.send(wire::message_type::run_ack, run_ack{id});
    BOOST_TEST(eventually([&] { return std::filesystem::exists(run_dir(id) / "acked"); }));
    BOOST_TEST(eventually([&] {
      auto h = server.next<heartbeat>(wire::message_type::heartbeat);
      return h && h->running_runs.empty();
    }));
  }

  /// Kills the supervisor of run `id` (as if it failed); the run_done the agent then reports.
  std::optional<run_done> kill_supervisor(const std::string& id) {
    actors::run_supervisor_actor supervisor;
    (*self)
      ->request(agent, caf::infinite, actors::agent_atoms::supervisor::value, id)
      .receive([&](const actors::run_supervisor_actor& a) { supervisor = a; },
               [&](const caf::error& e) { BOOST_FAIL(system->render(e)); });
    BOOST_REQUIRE(supervisor);
    (*self)->send_exit(supervisor, caf::exit_reason::kill);
    return server.next<run_done>(wire::message_type::run_done);
  }

  /// The run_done of run `id` (those of other runs that come first are kept for their turn).
  run_done done_of(const std::string& id) {
    while (!dones.count(id)) {
      auto d = server.next<run_done>(wire::message_type::run_done);
      BOOST_REQUIRE_MESSAGE(d, "no run_done for " << id);
      dones[d->run_id] = *d;
    }
    return dones.at(id);
  }
  std::map<std::string, run_done> dones;

  /// The pid in the run's exec.pid (`file`: a DDP rank's exec-rank<k>.pid), once it is there.
  int pid_of(const std::string& id, const std::string& file = "exec.pid") {
    int pid = -1;
    BOOST_REQUIRE(eventually([&] {
      std::ifstream in{run_dir(id) / file};
      return static_cast<bool>(in >> pid);
    }));
    return pid;
  }
};

std::string file_text(const std::filesystem::path& file) {
  std::ifstream in{file};
  return {std::istreambuf_iterator<char>{in}, {}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(agent_test)

BOOST_FIXTURE_TEST_CASE(a_run_starts_on_its_renumbered_cards_reports_its_events_and_its_end,
                        agent_fixture) {
  join();
  assign("r1", {"sim:1", "sim:0"});
  std::vector<std::uint64_t> cursors;
  while (cursors.size() < 2) {
    auto update = server.next<run_update>(wire::message_type::run_update);
    BOOST_REQUIRE(update);
    BOOST_TEST(update->run_id == "r1");
    for (const auto& e : update->events)
      cursors.push_back(e.cursor);
  }
  BOOST_TEST((cursors == std::vector<std::uint64_t>{1, 2}));
  auto done = server.next<run_done>(wire::message_type::run_done);
  BOOST_REQUIRE(done);
  BOOST_TEST(done->run_id == "r1");
  BOOST_TEST((done->outcome.status == run_status::succeeded));
  BOOST_TEST(done->last_cursor == 2u);
  // The launch plan: the worker's sim:1 is the run's sim:0, and the process sees their sizes and
  // the agent's cards (it charges them, not cards of its own).
  BOOST_TEST(file_text(run_dir("r1") / "env.txt")
             == std::to_string(2 * gib) + "=SIM-CARD-t-1," + std::to_string(1 * gib) + "=SIM-CARD-t-0|\n");
  auto run = nlohmann::json::parse(file_text(run_dir("r1") / "run.json"));
  BOOST_TEST(run["device"] == "sim:0");
  BOOST_TEST(run["worker"] == "w1");
  BOOST_TEST((run["visible_devices"] == nlohmann::json{"sim:0", "sim:1"}));
  BOOST_TEST((run["device_aliases"] == nlohmann::json{{"sim:0", "sim:1"}, {"sim:1", "sim:0"}}));
  acknowledge("r1");
}

BOOST_FIXTURE_TEST_CASE(a_device_the_worker_does_not_offer_fails_the_run_at_once, agent_fixture) {
  join();
  assign("r2", {"sim:5"});
  auto done = server.next<run_done>(wire::message_type::run_done);
  BOOST_REQUIRE(done);
  BOOST_TEST(done->run_id == "r2");
  BOOST_TEST((done->outcome.status == run_status::failed));
  BOOST_TEST(done->outcome.error == "worker 'w1': this worker does not offer sim:5");
  BOOST_TEST(!std::filesystem::exists(run_dir("r2")));
}

BOOST_FIXTURE_TEST_CASE(a_supervisor_that_dies_fails_its_run_and_its_process_is_stopped,
                        agent_fixture) {
  join();
  assign("sleepy1", {"sim:0"});
  int pid = pid_of("sleepy1");
  BOOST_REQUIRE(eventually([&] { return std::filesystem::exists(run_dir("sleepy1") / "env.txt"); }));
  BOOST_TEST(::kill(pid, 0) == 0);
  auto done = kill_supervisor("sleepy1");
  BOOST_REQUIRE(done);
  BOOST_TEST(done->run_id == "sleepy1");
  BOOST_TEST((done->outcome.status == run_status::failed));
  BOOST_TEST(done->outcome.error.find("worker 'w1': the run's supervisor failed (") == 0u,
             done->outcome.error);
  BOOST_TEST(done->outcome.error.find("so its process was stopped") != std::string::npos);
  // Stopped, and reaped by the agent: no such process any more.
  BOOST_TEST(eventually([&] { return ::kill(pid, 0) != 0; }));
  // The agent goes on: it takes the acknowledgement, and its heartbeats come without the run.
  acknowledge("sleepy1");
}

BOOST_FIXTURE_TEST_CASE(a_ddp_runs_supervisor_that_dies_takes_every_rank_with_it, agent_fixture) {
  join();
  // A ddp loop on two cards: the agent starts rank 0 (the run's process) and rank 1 beside it.
  assign("sleepy2", {"sim:0", "sim:1"},
         R"({"nodes":[{"id":"loop","type":"TrainingLoop","params":{"strategy":"ddp"}}],"edges":[]})");
  int rank0 = pid_of("sleepy2");
  int rank1 = pid_of("sleepy2", "exec-rank1.pid");
  BOOST_TEST(::kill(rank0, 0) == 0);
  BOOST_TEST(::kill(rank1, 0) == 0);
  auto done = kill_supervisor("sleepy2");
  BOOST_REQUIRE(done);
  BOOST_TEST((done->outcome.status == run_status::failed));
  BOOST_TEST(done->outcome.error.find("worker 'w1': the run's supervisor failed (") == 0u, done->outcome.error);
  // No rank outlives the run its agent gave up: both are stopped and reaped.
  BOOST_TEST(eventually([&] { return ::kill(rank0, 0) != 0 && ::kill(rank1, 0) != 0; }));
  acknowledge("sleepy2");
}

BOOST_FIXTURE_TEST_CASE(a_run_given_while_a_forgotten_run_stops_on_its_card_waits_for_it, agent_fixture) {
  join();
  assign("stubborn1", {"sim:0"});
  int stubborn = pid_of("stubborn1");
  BOOST_REQUIRE(eventually([&] { return std::filesystem::exists(run_dir("stubborn1") / "env.txt"); }));
  // The server no longer follows it (a restart, a grace past): it is stopped, ignores SIGTERM, and
  // is killed at the stop deadline (1 s here).
  server.send(wire::message_type::welcome, welcome{version(), 50, {}, {"stubborn1"}});
  for (const auto* id : {"held", "stopped", "gone"})
    assign(id, {"sim:0"});
  assign("beside", {"sim:1"});
  // A run on another card starts at once; those on sim:0 wait, listed in the heartbeats.
  BOOST_TEST((done_of("beside").outcome.status == run_status::succeeded));
  BOOST_TEST(::kill(stubborn, 0) == 0, "the forgotten run was not still stopping");
  BOOST_TEST(eventually([&] {
    auto h = server.next<heartbeat>(wire::message_type::heartbeat);
    return h && std::count(h->running_runs.begin(), h->running_runs.end(), "held") == 1;
  }));
  BOOST_TEST(!std::filesystem::exists(run_dir("held")));
  server.send(wire::message_type::stop_run, stop_run{"stopped", false});
  BOOST_TEST((done_of("stopped").outcome.status == run_status::cancelled));
  server.send(wire::message_type::welcome, welcome{version(), 50, {}, {"gone"}});
  // Once the forgotten run is killed, the held run starts; the stopped and forgotten ones never do.
  BOOST_TEST((done_of("held").outcome.status == run_status::succeeded));
  BOOST_TEST(::kill(stubborn, 0) != 0, "the held run started beside the forgotten one");
  BOOST_TEST(!std::filesystem::exists(run_dir("stopped")));
  BOOST_TEST(!std::filesystem::exists(run_dir("gone")));
}

BOOST_FIXTURE_TEST_CASE(a_stopping_agent_says_goodbye_and_ends_when_the_server_says_it_back,
                        agent_fixture) {
  join();
  (*self)->send(agent, atoms::stop::value);
  auto bye = server.next<goodbye>(wire::message_type::goodbye);
  BOOST_REQUIRE(bye);
  BOOST_TEST(bye->reason.empty());  // a plain stop
  server.send(wire::message_type::goodbye, *bye);
  // It ends (on the server's goodbye, or at the latest at its own one-second deadline; the wait
  // here only bounds a hang on a busy machine).
  bool ended = false;
  (*self)->receive([&](atoms::ended, const std::string&, bool was_refused) { ended = !was_refused; },
                   caf::after(std::chrono::seconds(30)) >> [] {});
  BOOST_TEST(ended);
}

BOOST_FIXTURE_TEST_CASE(a_refused_hello_ends_the_agent_with_the_reason, agent_fixture) {
  BOOST_REQUIRE(server.next<hello>(wire::message_type::hello));
  server.send(wire::message_type::refused, refused{"no such worker", false});
  std::optional<std::string> reason;
  (*self)->receive([&](atoms::ended, const std::string& why, bool was_refused) {
    if (was_refused)
      reason = why;
  });
  BOOST_TEST(reason.value_or("") == "no such worker");
}

BOOST_AUTO_TEST_CASE(a_socket_says_when_it_could_not_send) {
  // A DEALER with `immediate` and no server behind its endpoint queues nothing.
  actors::zmq_socket_setup s;
  s.name = "test dealer";
  s.connect = "tcp://127.0.0.1:1";
  s.immediate = true;
  actors::zmq_socket_thread socket{s};
  socket.start([](const actors::zmq_socket_thread::frames&) {});
  std::mutex mutex;
  std::condition_variable told;
  std::optional<bool> sent;
  socket.send({"a", "b"}, [&](bool ok) {
    std::lock_guard lock{mutex};
    sent = ok;
    told.notify_all();
  });
  std::unique_lock lock{mutex};
  BOOST_REQUIRE(told.wait_for(lock, 10s, [&] { return sent.has_value(); }));
  BOOST_TEST(*sent == false);
}

BOOST_AUTO_TEST_SUITE_END()
