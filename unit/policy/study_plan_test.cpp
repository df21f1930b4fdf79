// A study's body and spec (study_spec.*) and its state machine (study_plan.*).

#include <boost/test/unit_test.hpp>

#include "actors/policy/study_plan.hpp"

using namespace cdui;
using namespace cdui::policy;
using nlohmann::json;

namespace {

json body() {
  return json::parse(R"({
    "graph": {"nodes": [{"id": "opt", "type": "Optimizer", "params": {}}], "edges": []},
    "space": [{"node": "opt", "param": "lr", "min": 0.001, "max": 0.1, "scale": "log"}],
    "objective": {"metric": "val_accuracy", "direction": "max"},
    "budget": {"trials": 6, "max_parallel": 2}})");
}

std::string refusal(const json& b) {
  auto parsed = parse_study_body(b);
  auto* bad = std::get_if<submission_error>(&parsed);
  return bad ? bad->message : "";
}

trial with_state(std::uint64_t number, trial_state s, std::optional<double> value = std::nullopt) {
  trial t;
  t.number = number;
  t.state = s;
  t.value = value;
  return t;
}

} // namespace

BOOST_AUTO_TEST_SUITE(study_plan_test)

BOOST_AUTO_TEST_CASE(a_body_is_read_with_optunas_defaults) {
  auto parsed = parse_study_body(body());
  BOOST_REQUIRE(std::holds_alternative<study_request>(parsed));
  auto& r = std::get<study_request>(parsed);
  BOOST_TEST(r.spec.trials == 6u);
  BOOST_TEST(r.spec.max_parallel == 2u);
  BOOST_TEST((r.spec.sampler == sampler_kind::tpe));
  BOOST_TEST(r.spec.tpe.n_startup_trials == 10u);
  BOOST_TEST(r.spec.tpe.n_ei_candidates == 24u);
  BOOST_TEST((r.spec.pruner == pruner_kind::median));
  BOOST_TEST(r.spec.median.n_startup_trials == 5u);
  BOOST_TEST(r.spec.asha.reduction_factor == 3u);
  BOOST_TEST(r.objective.maximize);
  // What cdui.db keeps reads back the same.
  r.spec.has_seed = true;
  r.spec.seed = 42;
  auto again = std::get<study_spec>(parse_study_spec(study_spec_json(r.spec)));
  BOOST_TEST(study_spec_json(again) == study_spec_json(r.spec));
  auto b = body();
  b["sampler"] = "random";
  b["pruner"] = {{"name", "asha"}, {"reduction_factor", 2}, {"min_resource", 2}};
  auto asha = std::get<study_request>(parse_study_body(b));
  BOOST_TEST((asha.spec.sampler == sampler_kind::random));
  BOOST_TEST((asha.spec.pruner == pruner_kind::asha));
  BOOST_TEST(asha.spec.asha.reduction_factor == 2u);
  BOOST_TEST(asha.spec.asha.min_resource == 2);
}

BOOST_AUTO_TEST_CASE(refusals_name_the_field) {
  auto b = body();
  b.erase("budget");
  BOOST_TEST(refusal(b) == "field 'budget' is missing");
  b = body();
  b["budget"]["trials"] = 0;
  BOOST_TEST(refusal(b) == "budget.trials: must be a whole number from 1 to 1000000000");
  b = body();
  b["budget"]["max_parallel"] = "2";
  BOOST_TEST(refusal(b) == "budget.max_parallel: must be a whole number from 1 to 10000");
  b = body();
  b["space"][0]["scale"] = "ln";
  BOOST_TEST(refusal(b) == "space[0].scale: must be \"linear\" or \"log\"");
  b = body();
  b["sampler"] = "grid";
  BOOST_TEST(refusal(b) == "sampler.name: must be \"random\" or \"tpe\"");
  b = body();
  b["pruner"] = "hyperband";
  BOOST_TEST(refusal(b) == "pruner.name: must be \"none\", \"median\" or \"asha\"");
  b = body();
  b["pruner"] = {{"name", "asha"}, {"reduction_factor", 1}};
  BOOST_TEST(refusal(b) == "pruner.reduction_factor: must be a whole number from 2 to 1000");
  b = body();
  b["spec"] = json::object();
  BOOST_TEST(refusal(b) == "field 'spec' is not known (known: graph, name, space, objective, budget, sampler, "
                           "pruner, seed, options)");
  b = body();
  b["options"] = {{"lane", "interactive"}};
  BOOST_TEST(refusal(b).rfind("option 'lane': a study's trials are queued runs", 0) == 0);
}

BOOST_AUTO_TEST_CASE(keeps_max_parallel_in_flight_within_the_budget) {
  study_spec spec;
  spec.trials = 5;
  spec.max_parallel = 2;
  std::vector<trial> trials;
  BOOST_TEST(trials_to_start(spec, trials, false) == 2u);
  trials = {with_state(0, trial_state::running), with_state(1, trial_state::complete, 0.5)};
  BOOST_TEST(trials_to_start(spec, trials, false) == 1u);
  BOOST_TEST(trials_to_start(spec, trials, true) == 0u);
  trials.push_back(with_state(2, trial_state::pruned));
  trials.push_back(with_state(3, trial_state::failed));
  BOOST_TEST(trials_to_start(spec, trials, false) == 1u);  // the budget's last one
  trials.push_back(with_state(4, trial_state::running));
  BOOST_TEST(trials_to_start(spec, trials, false) == 0u);
  BOOST_TEST(to_string(study_state(spec, trials, false, true)) == std::string{"running"});
  trials[0].state = trial_state::complete;
  trials[0].value = 0.7;
  trials[4].state = trial_state::pruned;
  BOOST_TEST(to_string(study_state(spec, trials, false, true)) == std::string{"finished"});
  BOOST_TEST(*best_trial(trials, true) == 0u);
  BOOST_TEST(*best_trial(trials, false) == 1u);
  BOOST_TEST(to_string(study_state(spec, {with_state(0, trial_state::running)}, true, true))
             == std::string{"cancelling"});
  BOOST_TEST(to_string(study_state(spec, {with_state(0, trial_state::failed)}, true, true))
             == std::string{"cancelled"});
  spec.trials = 1;
  BOOST_TEST(to_string(study_state(spec, {with_state(0, trial_state::failed)}, false, true)) == std::string{"failed"});
  BOOST_TEST(!best_trial({with_state(0, trial_state::failed)}, true));
}

BOOST_AUTO_TEST_CASE(intermediate_values_come_from_metric_events) {
  json e{{"node", "loop"}, {"name", "val_accuracy"}, {"step", 3}, {"value", 0.875}};
  BOOST_TEST(objective_point(e, "val_accuracy")->first == 3);
  BOOST_TEST(objective_point(e, "loop.val_accuracy")->second == 0.875);
  BOOST_TEST(!objective_point(e, "eval.val_accuracy"));
  BOOST_TEST(!objective_point(e, "val_loss"));
  trial t;
  BOOST_TEST(*trial_value(t, R"({"loop": {"final_val_accuracy": 0.9}})", "val_accuracy") == 0.9);
  BOOST_TEST(*trial_value(t, R"({"loop": {"final_val_accuracy": 0.9}})", "loop.val_accuracy") == 0.9);
  t.intermediate = {{1, 0.5}, {2, 0.8}};
  BOOST_TEST(*trial_value(t, "{}", "val_accuracy") == 0.8);
  BOOST_TEST((trial_state_of(run_status::pruned) == trial_state::pruned));
  BOOST_TEST((trial_state_of(run_status::interrupted) == trial_state::running));
  BOOST_TEST((trial_state_of(run_status::cancelled) == trial_state::failed));
}

BOOST_AUTO_TEST_SUITE_END()
