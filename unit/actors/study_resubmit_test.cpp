// A study whose next trial the run queue cannot take for now (its store cannot record it: a full
// disk) submits it again a while later, instead of quitting and leaving the study active with
// nobody to run it. The study actor is the real one, on a real store; the queue is a stand-in that
// refuses the first submit of trial 1 as unavailable, then takes it, and reports each trial ended.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <memory>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/policy/study_spec.hpp"
#include "actors/server/study_actor.hpp"
#include "messages/atoms.hpp"
#include "messages/json_text.hpp"
#include "storage/run_store.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"
#include "testkit/wait.hpp"

using namespace cdui;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

/// What the stand-in queue saw.
struct queue_log {
  std::atomic<int> trial_submits{0};
  std::atomic<int> refused{0};
};

/// Refuses the first submit of each trial after the first as unavailable (what submit_trial
/// answers when the store cannot record it), takes it the next time; every run has ended.
caf::behavior stand_in_queue(caf::event_based_actor*, std::shared_ptr<queue_log> log) {
  return {
    [log](atoms::trial, const trial_submission& t) {
      ++log->trial_submits;
      if (t.number >= 1 && log->refused.load() < static_cast<int>(t.number)) {
        ++log->refused;
        return submit_result{"", "the server cannot record the trial: the disk is full (SQLite: database or disk is full)", true, {}};
      }
      return submit_result{"run-" + std::to_string(t.number), "", false, {}};
    },
    [](atoms::events, const std::string&, std::uint64_t, std::uint32_t) {
      event_batch b;
      b.finished = true;
      return b;
    },
    [](atoms::info, const std::string& id) {
      run_info info;
      info.id = id;
      info.status = run_status::succeeded;
      info.final_metrics = R"({"loop":{"final_val_accuracy":0.5}})";
      return info;
    },
  };
}

} // namespace

BOOST_AUTO_TEST_SUITE(study_resubmit_test)

BOOST_AUTO_TEST_CASE(a_trial_the_queue_cannot_take_now_is_submitted_again_and_the_study_finishes) {
  test::temp_home home;
  auto store = std::make_shared<storage::run_store>(home.path() / "cdui.db");
  auto body = json{{"graph", test::moons_graph_json(1)},
                   {"space", json::array({{{"node", "opt"}, {"param", "lr"}, {"values", {0.1, 0.01, 0.001}}}})},
                   {"objective", {{"metric", "val_accuracy"}, {"direction", "max"}}},
                   {"budget", {{"trials", 3}, {"max_parallel", 1}}},
                   {"sampler", "random"},
                   {"seed", 1}};
  auto parsed = policy::parse_study_body(body);
  BOOST_REQUIRE(std::holds_alternative<policy::study_request>(parsed));
  auto& request = std::get<policy::study_request>(parsed);
  study_record study;
  study.id = "s1";
  study.name = "lr study";
  study.graph_json = request.base.graph_json;
  study.spec = json_text(policy::study_spec_json(request.spec));
  study.objective = json_text(policy::objective_json(request.objective));
  study.options = json_text(policy::options_json(request.base));
  // Trial 0 is recorded with the study, as server::submit_study does.
  storage::stored_run first;
  first.info.id = "run-0";
  first.info.status = run_status::queued;
  first.info.options = "{}";
  first.graph_json = study.graph_json;
  store->insert_trial(&study, study.id, 0, first, R"({"opt.lr":0.1})");

  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  auto log = std::make_shared<queue_log>();
  auto queue = system.spawn(stand_in_queue, log);
  auto actor = system.spawn(actors::study_supervisor, study, caf::actor_cast<actors::run_queue_actor>(queue), store);
  caf::scoped_actor self{system};
  self->monitor(actor);
  caf::error reason;
  bool ended = false;
  self->receive_while([&] { return !ended; })(
    [&](caf::down_msg& down) {
      reason = down.reason;
      ended = true;
    },
    caf::after(std::chrono::seconds(120)) >> [&] { ended = true; });
  BOOST_TEST(!reason, system.render(reason));
  // Trials 1 and 2 were each refused once and taken the second time: four submits in all.
  BOOST_TEST(log->refused == 2);
  BOOST_TEST(log->trial_submits == 4);
  auto stored = store->find_study("s1");
  BOOST_REQUIRE(stored.has_value());
  BOOST_TEST(stored->state == "finished");
  BOOST_TEST(store->study_trials("s1").size() == 1u);  // the stand-in recorded none of the others
  caf::anon_send_exit(queue, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
