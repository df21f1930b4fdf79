// The watchdog reports the death of the server's own actors (which nothing replaces), once, and
// says nothing when they stop for a shutdown. Real cache_store actors, killed.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <mutex>

#include <caf/all.hpp>

#include "actors/server/cache_store.hpp"
#include "actors/server/watchdog.hpp"
#include "messages/atoms.hpp"
#include "storage/lru_store.hpp"

using namespace cdui;
using namespace std::chrono_literals;

namespace {

struct watched_stores {
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  actors::cache_store_actor a;
  actors::cache_store_actor b;
  caf::actor watchdog;
  std::mutex mutex;
  std::vector<std::string> reports;
  std::promise<void> reported;

  watched_stores() {
    config.set("logger.verbosity", caf::atom("quiet"));
    system = std::make_unique<caf::actor_system>(config);
    a = system->spawn(actors::cache_store, storage::execution_cache_budget, true);
    b = system->spawn(actors::cache_store, storage::run_output_store_budget, false);
    watchdog = actors::spawn_watchdog(
      *system,
      {{"execution cache store", caf::actor_cast<caf::strong_actor_ptr>(a)},
       {"run output store", caf::actor_cast<caf::strong_actor_ptr>(b)}},
      [this](const std::string& why) {
        std::lock_guard lock{mutex};
        reports.push_back(why);
        if (reports.size() == 1)
          reported.set_value();
      });
    // Answered once it watches both (its monitors are set before its first message).
    caf::scoped_actor self{*system};
    self->request(watchdog, 10s, atoms::status::value)
      .receive([](std::size_t n) { BOOST_TEST(n == 2u); }, [](caf::error&) { BOOST_FAIL("no watchdog"); });
  }

  ~watched_stores() {
    caf::anon_send_exit(watchdog, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
    system.reset();
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(watchdog_test)

BOOST_FIXTURE_TEST_CASE(a_dead_actor_of_the_server_is_reported_once_naming_it, watched_stores) {
  caf::anon_send_exit(b, caf::exit_reason::kill);
  BOOST_REQUIRE((reported.get_future().wait_for(30s) == std::future_status::ready));
  // A second death is not reported again: the server is stopping already.
  caf::anon_send_exit(a, caf::exit_reason::kill);
  caf::scoped_actor self{*system};
  self->wait_for(a);
  self->request(watchdog, 10s, atoms::status::value).receive([](std::size_t) {}, [](caf::error&) {});
  std::lock_guard lock{mutex};
  BOOST_REQUIRE(reports.size() == 1u);
  BOOST_TEST(reports[0] == "the server's run output store actor ended unexpectedly "
                           "(exit_reason(kill)); the server cannot go on without it and stops");
}

BOOST_FIXTURE_TEST_CASE(actors_stopped_for_a_shutdown_are_not_reported, watched_stores) {
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  caf::scoped_actor self{*system};
  self->wait_for(a);
  // a's down message reached the watchdog long before b's: the one report is b's.
  caf::anon_send_exit(b, caf::exit_reason::kill);
  BOOST_REQUIRE((reported.get_future().wait_for(30s) == std::future_status::ready));
  std::lock_guard lock{mutex};
  BOOST_REQUIRE(reports.size() == 1u);
  BOOST_TEST(reports[0].find("run output store") != std::string::npos, reports[0]);
}

BOOST_AUTO_TEST_SUITE_END()
