// The worker registry and its worker proxies (actors/server/worker_registry.*, worker_proxy.*),
// against an agent played by hand (testkit/wire_peer.hpp) on a real bridge on 127.0.0.1. A
// scoped actor stands in for a run's actor: it receives what the registry sends the run.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/server/worker_registry.hpp"
#include "messages/atoms.hpp"
#include "messages/stop_reason.hpp"
#include "messages/version.hpp"
#include "messages/wire.hpp"
#include "storage/run_store.hpp"
#include "testkit/home.hpp"
#include "testkit/wait.hpp"
#include "testkit/wire_peer.hpp"

using namespace cdui;
using namespace std::chrono_literals;

namespace {

constexpr const char* token = "test-session-token";

caf::actor_system_config quiet_config() {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", std::size_t{2});
  cfg.set("logger.verbosity", caf::atom("quiet"));
  return cfg;
}

/// A registry on its own bridge, with `queue` standing in for its run queue, and one agent
/// (`peer`) that joined it as worker "w1", its heartbeats due every `heartbeat_ms`.
struct registry_fixture {
  explicit registry_fixture(std::int64_t heartbeat_ms = 60'000) {
    policy::worker_table::config table{version(), "", token, heartbeat_ms, {}};
    registry = system.spawn(actors::worker_registry, table, bridge,
                            std::make_shared<storage::run_store>(home.path() / "cdui.db"),
                            std::int64_t{300'000});
    caf::anon_send(registry, atoms::attach::value, caf::actor_cast<actors::run_queue_actor>(queue));
    bridge->start(registry);
    peer.send(wire::message_type::hello,
              test::make_hello("w1", token, {{"cpu", "cpu", "cpu-test", 1 << 30, 1 << 30}}));
    BOOST_REQUIRE(next_of(wire::message_type::welcome));
  }
  ~registry_fixture() { caf::anon_send_exit(registry, caf::exit_reason::user_shutdown); }

  /// The next message of `type` the agent receives (others are skipped), within 10 s.
  std::optional<std::string> next_of(wire::message_type type) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      auto m = peer.receive(100ms);
      if (m && m->first == type)
        return m->second;
    }
    return std::nullopt;
  }

  /// Gives the run `id` to w1, with `run` as its actor, and waits for the agent to receive it.
  void assign(const std::string& id, const caf::actor& run) {
    caf::anon_send(registry, atoms::assign::value,
                   assign_run{id, id, "{}", "{}", {"cpu"}, 1, {}}, std::string{"w1"}, run);
    auto a = next_of(wire::message_type::assign_run);
    BOOST_REQUIRE(a);
    BOOST_TEST(wire::decode<assign_run>(*a)->run_id == id);
  }

  actors::worker_proxy_actor proxy(const std::string& name) {
    actors::worker_proxy_actor answer;
    asker->request(registry, 10s, atoms::proxy_of::value, name)
      .receive([&](actors::worker_proxy_actor& p) { answer = std::move(p); },
               [&](caf::error& e) { BOOST_FAIL("no answer from the registry: " + system.render(e)); });
    return answer;
  }

  worker_proxy_status status_of(const actors::worker_proxy_actor& proxy) {
    worker_proxy_status out;
    asker->request(proxy, 10s, atoms::status::value)
      .receive([&](worker_proxy_status& p) { out = std::move(p); },
               [&](caf::error& e) { BOOST_FAIL("no answer: " + system.render(e)); });
    return out;
  }

  workers_status workers() {
    workers_status out;
    asker->request(registry, 10s, atoms::status::value)
      .receive([&](workers_status& w) { out = std::move(w); },
               [&](caf::error& e) { BOOST_FAIL("no answer: " + system.render(e)); });
    return out;
  }

  /// Whether the run queue is told within 10 s that w1's slots are open, or closed for `why`;
  /// other updates before it are skipped.
  bool queue_told(worker_availability why) {
    bool told = false;
    bool waiting = true;
    while (waiting)
      queue->receive([&](atoms::worker_update, std::string& name, std::vector<device_offer>&,
                         worker_availability a, bool) {
        if (name == "w1" && a == why)
          told = true;
        waiting = !told;
      },
                     caf::after(10s) >> [&] { waiting = false; });
    return told;
  }

  /// w1 as the Workers panel shows it, once its status is `status` (within 10 s).
  std::optional<worker_entry> w1_once(const std::string& status) {
    std::optional<worker_entry> found;
    test::eventually([&] {
      auto all = workers();
      if (all.workers.size() == 1u && all.workers[0].status == status)
        found = all.workers[0];
      return found.has_value();
    }, 10s);
    return found;
  }

  /// The run actor's next (finished, outcome), within 10 s, with or without a stop's word (an end
  /// the worker's proxy decided); (append, events) before it are skipped.
  std::optional<run_outcome> finished_of(caf::scoped_actor& run) {
    std::optional<run_outcome> outcome;
    bool waiting = true;
    while (waiting)
      run->receive([&](atoms::finished, run_outcome& o) { outcome = std::move(o); waiting = false; },
                   [&](atoms::finished, run_outcome& o, stop_reason) {
                     outcome = std::move(o);
                     waiting = false;
                   },
                   [&](atoms::append, std::vector<run_event>&) {},
                   caf::after(10s) >> [&] { waiting = false; });
    return outcome;
  }

  test::temp_home home;
  caf::actor_system_config cfg = quiet_config();
  caf::actor_system system{cfg};
  std::shared_ptr<actors::zmq_bridge> bridge = std::make_shared<actors::zmq_bridge>("tcp://127.0.0.1:0");
  actors::worker_registry_actor registry;
  caf::scoped_actor queue{system};
  test::raw_peer peer{bridge->endpoint()};
  caf::scoped_actor asker{system};
};

/// Heartbeats due every 200 ms: late after 400 ms, gone after 600 ms.
struct fast_heartbeats : registry_fixture {
  fast_heartbeats() : registry_fixture(200) {}
};

} // namespace

BOOST_AUTO_TEST_SUITE(worker_registry_test)

BOOST_FIXTURE_TEST_CASE(a_proxy_follows_its_workers_runs, registry_fixture) {
  caf::scoped_actor run{system};
  assign("r1", caf::actor_cast<caf::actor>(run));
  peer.send(wire::message_type::run_update,
            run_update{"r1", {{1, 5, "execution_start", "{}"}, {2, 6, "progress", "{}"}}});
  run->receive([&](atoms::append, std::vector<run_event>& events) { BOOST_TEST(events.size() == 2u); },
               caf::after(10s) >> [] { BOOST_FAIL("the run's events did not come"); });
  // The registry's status carries the proxy's own: connected, following r1 at cursor 2.
  auto during = workers();
  BOOST_REQUIRE(during.proxies.size() == 1u);
  BOOST_REQUIRE(during.workers.size() == 1u);
  BOOST_TEST(during.workers[0].followed_runs == 1u);
  const auto& p = during.proxies[0];
  BOOST_TEST(p.worker == "w1");
  BOOST_TEST(p.connected);
  BOOST_REQUIRE(p.runs.size() == 1u);
  BOOST_TEST(p.runs[0].id == "r1");
  BOOST_TEST(p.runs[0].cursor == 2u);
  BOOST_TEST(!p.runs[0].adopting);

  peer.send(wire::message_type::run_done, run_done{"r1", {run_status::succeeded, "", "{}"}, 2});
  auto outcome = finished_of(run);
  BOOST_REQUIRE(outcome);
  BOOST_TEST(static_cast<int>(outcome->status) == static_cast<int>(run_status::succeeded));
  auto ack = next_of(wire::message_type::run_ack);
  BOOST_REQUIRE(ack);
  BOOST_TEST(wire::decode<run_ack>(*ack)->run_id == "r1");
  auto listing = workers();
  BOOST_REQUIRE(listing.workers.size() == 1u);
  BOOST_TEST(listing.workers[0].name == "w1");
  BOOST_TEST(listing.workers[0].followed_runs == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_dead_proxy_fails_its_runs_and_a_fresh_one_takes_the_worker, registry_fixture) {
  caf::scoped_actor run{system};
  assign("r1", caf::actor_cast<caf::actor>(run));
  auto old_proxy = proxy("w1");
  BOOST_REQUIRE(old_proxy);

  caf::anon_send_exit(old_proxy, caf::exit_reason::kill);

  // The run ends failed, saying why, and its agent is told to stop it.
  auto outcome = finished_of(run);
  BOOST_REQUIRE(outcome);
  BOOST_TEST(static_cast<int>(outcome->status) == static_cast<int>(run_status::failed));
  BOOST_TEST(outcome->error.find("the server's actor for worker 'w1' ended unexpectedly") == 0u,
             outcome->error);
  BOOST_TEST(outcome->error.find("it is failed and stopped on the worker") != std::string::npos);
  auto stop = next_of(wire::message_type::stop_run);
  BOOST_REQUIRE(stop);
  BOOST_TEST(wire::decode<stop_run>(*stop)->run_id == "r1");
  BOOST_TEST(wire::decode<stop_run>(*stop)->interrupt);

  // The worker stays online, with a fresh proxy on the same connection that takes new runs.
  auto listing = workers();
  BOOST_REQUIRE(listing.workers.size() == 1u);
  BOOST_TEST(listing.workers[0].status == "online");
  auto fresh = proxy("w1");
  BOOST_REQUIRE(fresh);
  BOOST_TEST((fresh.address() != old_proxy.address()));
  caf::scoped_actor second{system};
  assign("r2", caf::actor_cast<caf::actor>(second));

  // The stopped run's end is acknowledged, not recorded: the server ended it already.
  peer.send(wire::message_type::run_done, run_done{"r1", {run_status::interrupted, "stopped", "{}"}, 0});
  auto ack = next_of(wire::message_type::run_ack);
  BOOST_REQUIRE(ack);
  BOOST_TEST(wire::decode<run_ack>(*ack)->run_id == "r1");
  auto status = status_of(fresh);
  BOOST_REQUIRE(status.runs.size() == 1u);
  BOOST_TEST(status.runs[0].id == "r2");
}

BOOST_FIXTURE_TEST_CASE(a_removed_workers_proxy_quits_and_is_not_replaced, registry_fixture) {
  caf::scoped_actor run{system};
  assign("r1", caf::actor_cast<caf::actor>(run));
  auto old_proxy = proxy("w1");
  caf::scoped_actor watcher{system};
  watcher->monitor(old_proxy);

  enrollment removed;
  asker->request(registry, 10s, atoms::remove::value, std::string{"w1"})
    .receive([&](enrollment& e) { removed = std::move(e); },
             [&](caf::error& e) { BOOST_FAIL("no answer: " + system.render(e)); });
  BOOST_TEST(removed.error.empty(), removed.error);

  auto outcome = finished_of(run);
  BOOST_REQUIRE(outcome);
  BOOST_TEST(outcome->error == "worker 'w1' was removed by an operator");
  auto refusal = next_of(wire::message_type::refused);
  BOOST_REQUIRE(refusal);
  BOOST_TEST(wire::decode<refused>(*refusal)->reason == "worker 'w1' was removed by an operator");
  bool down = false;
  watcher->receive([&](caf::down_msg& d) { down = d.source == old_proxy.address(); },
                   caf::after(10s) >> [] {});
  BOOST_TEST(down);
  BOOST_TEST(!proxy("w1"));
  BOOST_TEST(workers().workers.empty());
}

// A server killed after it recorded a worker run as running and before its assign_run reached the
// agent: the next server adopts the run, and the agent's hello does not list it (sweep_test's kill
// -9 flake). Such a run goes to the worker again; one the worker had sent events of still fails.
BOOST_FIXTURE_TEST_CASE(an_adopted_run_its_worker_never_had_is_sent_again_one_it_reported_on_fails,
                        registry_fixture) {
  caf::scoped_actor never_sent{system};
  caf::scoped_actor reported{system};
  caf::anon_send(registry, atoms::adopt::value, std::string{"r1"}, std::string{"w1"},
                 caf::actor_cast<caf::actor>(never_sent), std::uint64_t{0});
  caf::anon_send(registry, atoms::adopt::value, std::string{"r2"}, std::string{"w1"},
                 caf::actor_cast<caf::actor>(reported), std::uint64_t{3});
  peer.send(wire::message_type::hello,
            test::make_hello("w1", token, {{"cpu", "cpu", "cpu-test", 1 << 30, 1 << 30}}));
  auto w = next_of(wire::message_type::welcome);
  BOOST_REQUIRE(w);
  BOOST_TEST(wire::decode<welcome>(*w)->resume.empty());

  // r1's actor is asked to send the run again, as it does (run_actor's start_remote) ...
  bool asked = false;
  never_sent->receive([&](atoms::assign) { asked = true; },
                      caf::after(10s) >> [] { BOOST_FAIL("r1's actor was not asked to send it again"); });
  BOOST_REQUIRE(asked);
  caf::anon_send(registry, atoms::assign::value, assign_run{"r1", "r1", "{}", "{}", {"cpu"}, 1, {}},
                 std::string{"w1"}, caf::actor_cast<caf::actor>(never_sent));
  auto again = next_of(wire::message_type::assign_run);
  BOOST_REQUIRE(again);
  BOOST_TEST(wire::decode<assign_run>(*again)->run_id == "r1");
  // ... r2 fails, and the proxy follows r1 alone, no longer as an adoption.
  auto outcome = finished_of(reported);
  BOOST_REQUIRE(outcome);
  BOOST_TEST(static_cast<int>(outcome->status) == static_cast<int>(run_status::failed));
  BOOST_TEST(outcome->error.find("came back without the run") != std::string::npos, outcome->error);
  auto p = status_of(proxy("w1"));
  BOOST_REQUIRE(p.runs.size() == 1u);
  BOOST_TEST(p.runs[0].id == "r1");
  BOOST_TEST(!p.runs[0].adopting);
  never_sent->receive([&](atoms::finished, run_outcome& o) { BOOST_FAIL("r1 ended: " + o.error); },
                      caf::after(0s) >> [] {});
}

BOOST_FIXTURE_TEST_CASE(a_workers_actor_keeps_its_heartbeat_deadline_and_tells_the_queue, fast_heartbeats) {
  BOOST_TEST(queue_told(worker_availability::open));  // joined
  // The agent falls silent: late (Degraded, closed to new runs), then given up (Disconnected).
  BOOST_TEST(queue_told(worker_availability::late));
  BOOST_TEST(queue_told(worker_availability::disconnected));
  auto gone = w1_once("disconnected");
  BOOST_REQUIRE(gone);
  BOOST_TEST(gone->reason.find("no heartbeat for ") == 0u, gone->reason);
  auto actor_status = status_of(proxy("w1"));
  BOOST_TEST(!actor_status.connected);
  BOOST_TEST(actor_status.disconnected_ms > 0);

  // Its connection is no worker's any more: a heartbeat on it is asked for a hello.
  peer.send(wire::message_type::heartbeat, heartbeat{{}, {}});
  auto refusal = next_of(wire::message_type::refused);
  BOOST_REQUIRE(refusal);
  BOOST_TEST(wire::decode<refused>(*refusal)->retry);
  BOOST_TEST(wire::decode<refused>(*refusal)->reason
             == "this server does not know this connection; say hello again");

  // A hello brings it back, on the same actor, with its deadline started again.
  auto before = proxy("w1");
  peer.send(wire::message_type::hello,
            test::make_hello("w1", token, {{"cpu", "cpu", "cpu-test", 1 << 30, 1 << 30}}));
  BOOST_REQUIRE(next_of(wire::message_type::welcome));
  BOOST_TEST(queue_told(worker_availability::open));
  BOOST_TEST((proxy("w1").address() == before.address()));
}

BOOST_AUTO_TEST_SUITE_END()
