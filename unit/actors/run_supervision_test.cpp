// The run queue supervises its run actors: one that dies (here: killed) fails its run with the
// reason, frees its slot, and the run waiting behind it starts. Real actors, a real SQLite store,
// real training on generated data.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/server/run_queue.hpp"
#include "messages/actor_status.hpp"
#include "messages/atoms.hpp"
#include "messages/run_outcome.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"

using namespace cdui;
using namespace std::chrono_literals;

namespace {

run_request moons(int epochs) {
  run_request r;
  r.graph_json = test::moons_graph_json(epochs).dump();
  r.has_seed = true;
  r.seed = 7;
  return r;
}

/// Asks the queue as the facade does, and shuts it down at the end whatever the test found, so
/// that no run outlives the test (an actor system waits for its actors on the way out).
struct queue_client {
  caf::actor_system& system;
  actors::run_queue_actor queue;
  caf::scoped_actor self{system};

  template <class T, class... Ts>
  T ask(Ts... xs) {
    std::optional<T> answer;
    self->request(queue, std::chrono::seconds(60), xs...)
      .receive([&](T& x) { answer = std::move(x); },
               [&](caf::error& e) { BOOST_FAIL("the queue answered an error: " + system.render(e)); });
    return *answer;
  }

  ~queue_client() {
    self->request(queue, std::chrono::seconds(60), atoms::shutdown::value)
      .receive([](bool) {}, [](caf::error&) {});
    self->send_exit(queue, caf::exit_reason::user_shutdown);
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(run_supervision_test)

BOOST_AUTO_TEST_CASE(a_run_actor_that_dies_fails_its_run_frees_its_slot_and_the_next_run_starts) {
  test::temp_home home;
  std::filesystem::create_directories(home.path() / "runs");
  caf::actor_system_config config;
  config.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system system{config};

  actors::run_queue_config cfg;
  cfg.home = home.path();
  cfg.host = devices::host_inventory::probe("");
  cfg.store = std::make_shared<storage::run_store>(home.path() / "cdui.db");
  cfg.limits = {{"cpu", 1}};  // one run at a time: the second waits for the first's slot
  std::promise<caf::actor> first_actor;
  auto spawned = std::make_shared<int>(0);
  cfg.on_run_spawned = [&first_actor, spawned](const std::string&, const caf::actor& run) {
    if ((*spawned)++ == 0)
      first_actor.set_value(run);
  };
  queue_client q{system, system.spawn(actors::run_queue, std::move(cfg))};
  auto submit = [&](run_request r) {
    auto result = q.ask<submit_result>(atoms::submit::value, std::move(r));
    BOOST_REQUIRE_MESSAGE(result.ok(), result.error);
    return result.run_id;
  };

  auto doomed = submit(moons(1'000'000));  // trains until stopped
  auto next = submit(moons(1));
  auto run = first_actor.get_future().get();
  // The doomed run is training (its first event is in); the next one waits for the CPU slot.
  auto started = q.ask<event_batch>(atoms::events::value, doomed, std::uint64_t{0}, std::uint32_t{30000});
  BOOST_REQUIRE(!started.events.empty());
  BOOST_TEST(started.events.front().type == "execution_start");
  BOOST_TEST((q.ask<run_info>(atoms::info::value, next).status == run_status::queued));

  caf::anon_send_exit(run, caf::exit_reason::kill);

  // The next run could only start once the doomed run's slot was freed.
  auto done = q.ask<run_info>(atoms::wait::value, next);
  BOOST_TEST((done.status == run_status::succeeded), done.error);
  auto failed = q.ask<run_info>(atoms::info::value, doomed);
  BOOST_TEST((failed.status == run_status::failed));
  BOOST_TEST(failed.error.find("the run's actor ended unexpectedly") != std::string::npos, failed.error);
  BOOST_TEST(failed.finished_ms > 0);
  // Its log ends with the failure, as every run's does.
  auto events = q.ask<event_batch>(atoms::events::value, doomed, std::uint64_t{0}, std::uint32_t{0});
  BOOST_REQUIRE(!events.events.empty());
  BOOST_TEST(events.events.back().type == "execution_error");
  BOOST_TEST(nlohmann::json::parse(events.events.back().data)["error"] == failed.error);
  // No slot is held any more.
  auto status = q.ask<run_queue_status>(atoms::status::value);
  for (const auto& slot : status.queues)
    BOOST_TEST(slot.running.empty(), slot.device);
  BOOST_TEST(status.runs == 0u);
  BOOST_TEST(status.children.empty());
}

BOOST_AUTO_TEST_SUITE_END()
