// The run queue supervises its run actors: one that dies (here: killed) fails its run with the
// reason, frees its slot, and the run waiting behind it starts. Real actors, a real SQLite store,
// real training on generated data.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <map>
#include <mutex>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/server/run_actor.hpp"
#include "actors/server/run_queue.hpp"
#include "actors/policy/run_options.hpp"
#include "messages/actor_status.hpp"
#include "messages/atoms.hpp"
#include "messages/run_outcome.hpp"
#include "testkit/env.hpp"
#include "testkit/full_disk_vfs.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"
#include "testkit/wait.hpp"

using namespace cdui;
using namespace std::chrono_literals;

namespace {

run_request request(const nlohmann::json& graph) {
  run_request r;
  r.graph_json = graph.dump();
  r.has_seed = true;
  r.seed = 7;
  return r;
}


/// A run queue of this process with one CPU slot (a second run waits for the first's), the actors
/// it spawns by run id, and requests to it as the facade makes them. It is shut down at the end
/// whatever the test found, so that no run outlives the test.
struct supervised_queue {
  test::temp_home home;
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  std::shared_ptr<storage::run_store> store;
  actors::run_queue_actor queue;
  std::unique_ptr<caf::scoped_actor> self;
  std::mutex mutex;
  std::map<std::string, caf::actor> actors;

  supervised_queue() {
    std::filesystem::create_directories(home.path() / "runs");
    config.set("logger.verbosity", caf::atom("quiet"));
    system = std::make_unique<caf::actor_system>(config);
    actors::run_queue_config cfg;
    cfg.home = home.path();
    cfg.host = devices::host_inventory::probe("");
    store = std::make_shared<storage::run_store>(home.path() / "cdui.db");
    cfg.store = store;
    cfg.limits = {{"cpu", 1}};
    cfg.on_run_spawned = [this](const std::string& id, const caf::actor& run) {
      std::lock_guard lock{mutex};
      actors[id] = run;
    };
    queue = system->spawn(actors::run_queue, std::move(cfg));
    self = std::make_unique<caf::scoped_actor>(*system);
  }

  ~supervised_queue() {
    (*self)->request(queue, 60s, atoms::shutdown::value).receive([](bool) {}, [](caf::error&) {});
    (*self)->send_exit(queue, caf::exit_reason::user_shutdown);
    self.reset();
    system.reset();
  }

  template <class T, class... Ts>
  T ask(Ts... xs) {
    std::optional<T> answer;
    (*self)->request(queue, 60s, xs...)
      .receive([&](T& x) { answer = std::move(x); },
               [&](caf::error& e) { BOOST_FAIL("the queue answered an error: " + system->render(e)); });
    return *answer;
  }

  std::string submit(run_request r) {
    auto result = ask<submit_result>(atoms::submit::value, std::move(r));
    BOOST_REQUIRE_MESSAGE(result.ok(), result.error);
    return result.run_id;
  }

  /// Kills the run's actor, as a bug would end it.
  void kill(const std::string& id) {
    caf::actor run;
    {
      std::lock_guard lock{mutex};
      run = actors.at(id);
    }
    caf::anon_send_exit(run, caf::exit_reason::kill);
  }

  /// Waits for the first event of `id` that `match` accepts (long polls, 30 s each at most).
  template <class F>
  void await_event(const std::string& id, F match) {
    std::uint64_t cursor = 0;
    for (int polls = 0; polls < 20; ++polls) {
      auto batch = ask<event_batch>(atoms::events::value, id, cursor, std::uint32_t{30000});
      for (const auto& e : batch.events) {
        cursor = e.cursor;
        if (match(e))
          return;
      }
    }
    BOOST_FAIL("run " + id + " never sent the awaited event");
  }

  /// The run ended failed because its actor died, and its log ends with that failure.
  void check_failed_by_its_actors_end(const std::string& id) {
    auto failed = ask<run_info>(atoms::wait::value, id);
    BOOST_TEST((failed.status == run_status::failed));
    BOOST_TEST(failed.error.find("the run's actor ended unexpectedly") != std::string::npos, failed.error);
    BOOST_TEST(failed.finished_ms > 0);
    auto events = ask<event_batch>(atoms::events::value, id, std::uint64_t{0}, std::uint32_t{0});
    BOOST_REQUIRE(!events.events.empty());
    BOOST_TEST(events.events.back().type == "execution_error");
    BOOST_TEST(nlohmann::json::parse(events.events.back().data)["error"] == failed.error);
  }

  /// No slot is held and no run is left.
  void check_idle() {
    auto status = ask<run_queue_status>(atoms::status::value);
    for (const auto& slot : status.queues) {
      BOOST_TEST(slot.running.empty(), slot.device);
      BOOST_TEST(slot.waiting.empty(), slot.device);
    }
    BOOST_TEST(status.floating.empty());
    BOOST_TEST(status.runs == 0u);
  }
};

bool started(const run_event& e) {
  return e.type == "execution_start";
}

/// The VFS first: the queue's store, opened after it, writes through it.
struct vfs_first {
  test::full_disk_vfs vfs;
};

/// supervised_queue on a disk that a test fills (vfs.set_full): its store's writes then fail.
struct queue_on_a_disk_that_fills : vfs_first, supervised_queue {};

} // namespace

BOOST_AUTO_TEST_SUITE(run_supervision_test)

BOOST_FIXTURE_TEST_CASE(a_run_actor_that_dies_fails_its_run_frees_its_slot_and_the_next_run_starts,
                        supervised_queue) {
  auto doomed = submit(request(test::moons_graph_json(1'000'000)));  // trains until stopped
  auto next = submit(request(test::moons_graph_json(1)));
  await_event(doomed, started);
  BOOST_TEST((ask<run_info>(atoms::info::value, next).status == run_status::queued));

  kill(doomed);

  // The next run could only start once the doomed run's slot was freed.
  auto done = ask<run_info>(atoms::wait::value, next);
  BOOST_TEST((done.status == run_status::succeeded), done.error);
  check_failed_by_its_actors_end(doomed);
  check_idle();
}

BOOST_FIXTURE_TEST_CASE(a_queued_or_floating_run_whose_actor_dies_leaves_its_queue, supervised_queue) {
  auto running = submit(request(test::moons_graph_json(1'000'000)));
  await_event(running, started);
  auto queued = submit(request(test::moons_graph_json(1)));
  auto floating_request = request(test::moons_graph_json(1));
  floating_request.worker = policy::any_worker;  // waits for a free CPU slot of any offerer
  floating_request.device = "cpu";
  auto floating = submit(floating_request);
  auto status = ask<run_queue_status>(atoms::status::value);
  BOOST_TEST((status.floating == std::vector<std::string>{floating}));

  kill(queued);
  kill(floating);
  check_failed_by_its_actors_end(queued);
  check_failed_by_its_actors_end(floating);
  status = ask<run_queue_status>(atoms::status::value);
  BOOST_TEST(status.floating.empty());
  for (const auto& slot : status.queues)
    BOOST_TEST(slot.waiting.empty(), slot.device);

  BOOST_TEST(ask<bool>(atoms::cancel::value, running));
  BOOST_TEST((ask<run_info>(atoms::wait::value, running).status == run_status::cancelled));
  check_idle();
}

BOOST_FIXTURE_TEST_CASE(a_run_stuck_inside_a_node_does_not_keep_its_dead_actors_slot,
                        supervised_queue) {
  test::temp_home data;
  auto csv = data.path() / "big.csv";
  test::write_big_csv(csv, 3'000'000);  // reading it takes seconds
  test::scoped_env roots{"CODEFYUI_DATA_ROOTS", data.path().string()};
  auto stuck = submit(request(test::csv_graph_json(csv)));
  auto next = submit(request(test::moons_graph_json(1)));
  await_event(stuck, [](const run_event& e) {
    auto data = nlohmann::json::parse(e.data);
    return e.type == "node_status" && data["node"] == "data" && data["status"] == "running";
  });

  kill(stuck);

  // The queue heard of the death while the read went on: its thread is left to end alone, and
  // ends at the read's next stop check (the dead actor's state asked it to stop; its events are
  // dropped).
  check_failed_by_its_actors_end(stuck);
  BOOST_TEST((ask<run_info>(atoms::wait::value, next).status == run_status::succeeded));
  BOOST_TEST(test::eventually([] { return actors::abandoned_executors() == 0; }, 60s));
  check_idle();
}

BOOST_FIXTURE_TEST_CASE(a_cancelled_run_stops_reading_its_csv, supervised_queue) {
  test::temp_home data;
  auto csv = data.path() / "big.csv";
  test::write_big_csv(csv, 3'000'000);  // seconds of reading, far more than a stop check's interval
  test::scoped_env roots{"CODEFYUI_DATA_ROOTS", data.path().string()};
  auto reading = submit(request(test::csv_graph_json(csv)));
  await_event(reading, [](const run_event& e) {
    auto data = nlohmann::json::parse(e.data);
    return e.type == "node_status" && data["node"] == "data" && data["status"] == "running";
  });

  BOOST_TEST(ask<bool>(atoms::cancel::value, reading));

  // The read itself stopped: the run ends cancelled through its node, not at the stop deadline
  // (which would end it interrupted and leave the read going on in an abandoned thread).
  auto ended = ask<run_info>(atoms::wait::value, reading);
  BOOST_TEST((ended.status == run_status::cancelled), to_string(ended.status) << ": " << ended.error);
  BOOST_TEST(actors::abandoned_executors() == 0);
  auto events = ask<event_batch>(atoms::events::value, reading, std::uint64_t{0}, std::uint32_t{0});
  bool data_stopped = false;
  for (const auto& e : events.events) {
    auto j = nlohmann::json::parse(e.data);
    data_stopped = data_stopped || (e.type == "node_status" && j["node"] == "data" && j["status"] == "stopped");
  }
  BOOST_TEST(data_stopped);
  check_idle();
}

BOOST_FIXTURE_TEST_CASE(a_store_that_refuses_writes_fails_its_runs_and_leaves_no_slot_held,
                        queue_on_a_disk_that_fills) {
  auto running = submit(request(test::moons_graph_json(1'000'000)));
  auto queued = submit(request(test::moons_graph_json(1)));
  await_event(running, [](const run_event& e) { return e.type == "progress"; });
  // Asked while both are in the queue's hands: each answers from its actor, at its end.
  auto running_end = (*self)->request(queue, 60s, atoms::wait::value, running);
  auto queued_end = (*self)->request(queue, 60s, atoms::wait::value, queued);

  vfs.set_full(true);

  // The running run's next events are refused: it stops and ends failed saying why. The queued
  // one then starts, cannot record its start, and ends failed the same way.
  for (auto* end : {&running_end, &queued_end})
    end->receive(
      [&](run_info& info) {
        BOOST_TEST((info.status == run_status::failed), info.id << ": " << to_string(info.status));
        BOOST_TEST(info.error.find("the server cannot record the run: the disk is full") == 0u, info.error);
      },
      [&](caf::error& e) { BOOST_FAIL("no end: " + system->render(e)); });
  check_idle();
  // Their ends are not in the store yet; once there is room they are, within a second or so.
  BOOST_TEST(!is_final(store->find(queued)->info.status));
  vfs.set_full(false);
  BOOST_TEST(test::eventually([&] {
    return store->find(running)->info.status == run_status::failed
           && store->find(queued)->info.status == run_status::failed;
  }, 30s));
  BOOST_TEST(store->find(queued)->info.error.find("the disk is full") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
