// The search watch (actors/server/search_watch.*) supervises the sweeps' and the studies' actors:
// one that is killed is followed again (the facade's refollow), at most max_search_refollows times
// per search; one that ends normally or for a shutdown is let go.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/server/search_watch.hpp"
#include "messages/atoms.hpp"
#include "testkit/wait.hpp"

using namespace cdui;
using namespace std::chrono_literals;

namespace {

using finish = caf::atom_constant<caf::atom("t_finish")>;

/// A search's actor: it quits normally when told its search ended.
caf::behavior search(caf::event_based_actor* self) {
  return {[=](finish) { self->quit(); }};
}

struct watch_fixture {
  caf::actor_system_config config;
  caf::actor_system system{config};
  std::mutex mutex;
  std::vector<std::string> refollowed;  // "kind id", in order
  caf::actor watch = actors::spawn_search_watch(system, [this](const std::string& kind, const std::string& id) {
    std::lock_guard lock{mutex};
    refollowed.push_back(kind + " " + id);
  });
  caf::scoped_actor self{system};

  ~watch_fixture() { caf::anon_send_exit(watch, caf::exit_reason::user_shutdown); }

  caf::actor watched(const std::string& kind, const std::string& id) {
    auto actor = system.spawn(search);
    self->send(watch, atoms::attach::value, kind, id, actor);
    return actor;
  }
  std::size_t watching() {
    std::size_t n = 0;
    self->request(watch, 10s, atoms::status::value).receive([&](std::size_t x) { n = x; }, [](caf::error&) {});
    return n;
  }
  std::vector<std::string> calls() {
    std::lock_guard lock{mutex};
    return refollowed;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(search_watch_test)

BOOST_FIXTURE_TEST_CASE(a_killed_search_actor_is_followed_again_and_one_that_ended_is_not, watch_fixture) {
  auto ended = watched("sweep", "s-done");
  auto stopped = watched("study", "t-stopped");
  auto killed = watched("sweep", "s-killed");
  BOOST_TEST(watching() == 3u);
  self->send(ended, finish::value);
  caf::anon_send_exit(stopped, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(killed, caf::exit_reason::kill);
  BOOST_REQUIRE(test::eventually([&] { return watching() == 0u; }));
  BOOST_TEST((calls() == std::vector<std::string>{"sweep s-killed"}));
}

BOOST_FIXTURE_TEST_CASE(a_search_whose_actor_keeps_dying_is_followed_again_a_bounded_number_of_times, watch_fixture) {
  for (std::size_t i = 0; i <= actors::max_search_refollows; ++i) {
    auto actor = watched("study", "t1");
    BOOST_REQUIRE(watching() == 1u);
    caf::anon_send_exit(actor, caf::exit_reason::kill);
    BOOST_REQUIRE(test::eventually([&] { return watching() == 0u; }));
  }
  BOOST_TEST(calls().size() == actors::max_search_refollows);
  BOOST_TEST(calls().front() == "study t1");
}

BOOST_AUTO_TEST_SUITE_END()
