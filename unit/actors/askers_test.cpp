// How the facade asks an actor: the answer, or an api_error of the right kind that names the part
// that failed: its refusal as it said it, busy when it did not answer in time or has stopped, a
// store failure as such, anything else internal.
#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <vector>

#include <caf/all.hpp>

#include "actors/common/askers.hpp"
#include "actors/common/guarded.hpp"

using namespace cdui;
using namespace std::chrono_literals;

namespace {

using ask_value = caf::atom_constant<caf::atom("t_value")>;
using ask_missing = caf::atom_constant<caf::atom("t_missing")>;
using ask_forever = caf::atom_constant<caf::atom("t_forever")>;
using ask_store = caf::atom_constant<caf::atom("t_store")>;
using ask_throw = caf::atom_constant<caf::atom("t_throw")>;

/// Answers each question its own way; the promises of "forever" are kept, never delivered.
caf::behavior oracle(caf::stateful_actor<std::vector<caf::response_promise>>* self) {
  return actors::guarded_behavior(
    "the oracle",
    [=](ask_value) -> caf::result<int> { return 42; },
    [=](ask_missing, const std::string& id) -> caf::result<int> {
      return actors::make_api_error(error_kind::not_found, "no run has the id '" + id + "'");
    },
    [=](ask_forever) -> caf::result<int> {
      self->state.push_back(self->make_response_promise());
      return caf::delegated<int>{};
    },
    [=](ask_store) -> caf::result<int> {
      throw api_failure(error_kind::store_failure, "the disk is full (SQLite: database or disk is full)");
    },
    [=](ask_throw) -> caf::result<int> { throw std::logic_error("a bug"); });
}

struct system_fixture {
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  caf::actor actor = system.spawn(oracle);
  actors::askers asking{system};
  const caf::duration deadline{10s};

  ~system_fixture() { caf::anon_send_exit(actor, caf::exit_reason::user_shutdown); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(askers_test)

BOOST_FIXTURE_TEST_CASE(an_answer_comes_as_a_value_and_a_refusal_with_its_kind_and_sentence, system_fixture) {
  auto value = asking.ask<int>(actor, "the oracle", deadline, ask_value::value);
  BOOST_TEST_REQUIRE(value.has_value());
  BOOST_TEST(*value == 42);
  auto missing = asking.ask<int>(actor, "the oracle", deadline, ask_missing::value, std::string{"abc"});
  BOOST_TEST_REQUIRE(!missing);
  BOOST_TEST((missing.error().kind == error_kind::not_found));
  BOOST_TEST(missing.error().message == "no run has the id 'abc'");
  // The asker that saw a refusal asks again.
  BOOST_TEST(asking.ask<int>(actor, "the oracle", deadline, ask_value::value).value() == 42);
}

BOOST_FIXTURE_TEST_CASE(a_part_that_does_not_answer_in_time_is_named_as_busy, system_fixture) {
  auto silent = asking.ask<int>(actor, "the run queue", caf::duration{50ms}, ask_forever::value);
  BOOST_TEST_REQUIRE(!silent);
  BOOST_TEST((silent.error().kind == error_kind::busy));
  BOOST_TEST(silent.error().message == "the run queue did not answer within 0.05 s: the server is busy; try again");
  // The late answer may still come to that asker: the next ask gets its own.
  BOOST_TEST(asking.ask<int>(actor, "the oracle", deadline, ask_value::value).value() == 42);
}

BOOST_FIXTURE_TEST_CASE(a_part_that_has_stopped_is_busy_and_says_so, system_fixture) {
  caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  caf::scoped_actor self{system};
  self->wait_for(actor);
  auto gone = asking.ask<int>(actor, "the worker registry", deadline, ask_value::value);
  BOOST_TEST_REQUIRE(!gone);
  BOOST_TEST((gone.error().kind == error_kind::busy));
  BOOST_TEST(gone.error().message == "the worker registry has stopped: the server is stopping");
}

BOOST_FIXTURE_TEST_CASE(a_store_that_cannot_write_is_a_store_failure_and_a_bug_is_internal, system_fixture) {
  auto full = asking.ask<int>(actor, "the oracle", deadline, ask_store::value);
  BOOST_TEST_REQUIRE(!full);
  BOOST_TEST((full.error().kind == error_kind::store_failure));
  BOOST_TEST(full.error().message == "the disk is full (SQLite: database or disk is full)");
  auto bug = asking.ask<int>(actor, "the oracle", deadline, ask_throw::value);
  BOOST_TEST_REQUIRE(!bug);
  BOOST_TEST((bug.error().kind == error_kind::internal));
  BOOST_TEST(bug.error().message == "the oracle failed: a bug");
  // The actor lives on.
  BOOST_TEST(asking.ask<int>(actor, "the oracle", deadline, ask_value::value).value() == 42);
}

BOOST_AUTO_TEST_SUITE_END()
