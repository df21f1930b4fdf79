// A message handler that throws: the actor answers with an error and lives on, instead of dying
// with everything it holds (CAF 0.17 ends an actor whose handler throws).
#include <boost/test/unit_test.hpp>

#include <stdexcept>

#include <caf/all.hpp>

#include "actors/common/guarded.hpp"

using namespace cdui;

namespace {

using boom = caf::atom_constant<caf::atom("t_boom")>;
using count = caf::atom_constant<caf::atom("t_count")>;
using note = caf::atom_constant<caf::atom("t_note")>;

caf::behavior counter(caf::stateful_actor<int>* self) {
  return actors::guarded_behavior(
    "counter",
    [=](boom, const std::string& what) -> int { throw std::runtime_error(what); },
    [=](note, bool fail) {
      if (fail)
        throw std::runtime_error("a handler with no answer failed");
      ++self->state;
    },
    [=](count) { return ++self->state; });
}

} // namespace

BOOST_AUTO_TEST_SUITE(guarded_test)

BOOST_AUTO_TEST_CASE(a_throwing_handler_answers_an_error_and_the_actor_lives_on) {
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  auto actor = system.spawn(counter);
  caf::scoped_actor self{system};
  std::string error;
  self->request(actor, std::chrono::seconds(10), boom::value, std::string{"bad bytes"})
    .receive([&](int) { error = "no error"; },
             [&](caf::error& e) { error = actors::to_api_error(e, "counter", system.render(e)).message; });
  BOOST_TEST(error == "counter failed: bad bytes");
  // A handler without an answer that throws is logged; the actor still counts.
  self->send(actor, note::value, true);
  self->send(actor, note::value, false);
  int n = 0;
  self->request(actor, std::chrono::seconds(10), count::value)
    .receive([&](int x) { n = x; }, [&](caf::error&) { n = -1; });
  BOOST_TEST(n == 2);
  self->send_exit(actor, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
