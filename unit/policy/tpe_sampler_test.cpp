#include <boost/test/unit_test.hpp>

#include <cmath>

#include "actors/policy/study_plan.hpp"
#include "actors/policy/tpe_sampler.hpp"

using namespace cdui;
using namespace cdui::policy;
using nlohmann::json;

namespace {

study_spec spec_of(sampler_kind sampler, std::uint64_t seed) {
  auto parsed = parse_study_spec(json::parse(R"({
    "space": [{"node": "opt", "param": "lr", "min": 0.0001, "max": 1, "scale": "log"},
              {"node": "model", "param": "width", "min": 2, "max": 64, "type": "int"},
              {"node": "opt", "param": "name", "values": ["adam", "sgd", "rmsprop"]}],
    "budget": {"trials": 40}})"));
  auto spec = std::get<study_spec>(parsed);
  spec.sampler = sampler;
  spec.has_seed = true;
  spec.seed = seed;
  return spec;
}

/// A synthetic objective to maximize: best at lr 0.01, width 40 and adam.
double score(const variant_params& p) {
  double lr = p[0].value.get<double>();
  double width = p[1].value.get<double>();
  double x = -std::pow(std::log10(lr) + 2, 2) - std::pow((width - 40) / 20, 2);
  return x - (p[2].value == "adam" ? 0 : 0.5);
}

/// Runs a sequential study of `n` trials on `score`; its trials.
std::vector<trial> study(const study_spec& spec, std::size_t n) {
  std::vector<trial> trials;
  for (std::uint64_t i = 0; i < n; ++i) {
    trial t;
    t.number = i;
    t.params = propose(spec, true, trials, i);
    t.state = trial_state::complete;
    t.value = score(t.params);
    trials.push_back(t);
  }
  return trials;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tpe_sampler_test)

BOOST_AUTO_TEST_CASE(the_same_seed_and_trials_give_the_same_params) {
  auto a = study(spec_of(sampler_kind::tpe, 7), 30);
  auto b = study(spec_of(sampler_kind::tpe, 7), 30);
  auto c = study(spec_of(sampler_kind::tpe, 8), 30);
  bool differs = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    BOOST_TEST(params_json(a[i].params) == params_json(b[i].params));
    differs |= params_json(a[i].params) != params_json(c[i].params);
  }
  BOOST_TEST(differs);
  // Fixed draws: the same on every machine and standard library (SplitMix64, no std distribution).
  BOOST_TEST(params_json(a[0].params).dump() == params_json(random_params(spec_of(sampler_kind::tpe, 7), 0)).dump());
}

BOOST_AUTO_TEST_CASE(values_stay_in_the_space) {
  for (const auto& t : study(spec_of(sampler_kind::tpe, 3), 40)) {
    double lr = t.params[0].value.get<double>();
    BOOST_TEST((lr >= 0.0001 && lr <= 1));
    BOOST_TEST(t.params[1].value.is_number_integer());
    auto width = t.params[1].value.get<std::int64_t>();
    BOOST_TEST((width >= 2 && width <= 64));
    BOOST_TEST((t.params[2].value == "adam" || t.params[2].value == "sgd" || t.params[2].value == "rmsprop"));
  }
}

BOOST_AUTO_TEST_CASE(random_until_n_startup_trials_have_a_result) {
  auto spec = spec_of(sampler_kind::tpe, 11);
  auto trials = study(spec, 9);
  // Nine results: still the random draw of that trial number.
  BOOST_TEST(params_json(propose(spec, true, trials, 9)) == params_json(random_params(spec, 9)));
  trials = study(spec, 10);
  BOOST_TEST(params_json(propose(spec, true, trials, 10)) != params_json(random_params(spec, 10)));
  // Running and failed trials are no results.
  auto running = trials;
  for (auto& t : running)
    t.state = trial_state::failed;
  BOOST_TEST(params_json(propose(spec, true, running, 10)) == params_json(random_params(spec, 10)));
}

BOOST_AUTO_TEST_CASE(tpe_finds_better_params_than_random_draws) {
  double tpe_mean = 0, random_mean = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    auto tpe = study(spec_of(sampler_kind::tpe, seed), 40);
    auto random = study(spec_of(sampler_kind::random, seed), 40);
    tpe_mean += *tpe[*best_trial(tpe, true)].value / 5;
    random_mean += *random[*best_trial(random, true)].value / 5;
    // Its last 20 proposals lie nearer the optimum than random draws do, on average.
  }
  BOOST_TEST_MESSAGE("best: tpe " << tpe_mean << ", random " << random_mean);
  BOOST_TEST(tpe_mean > random_mean);
}

BOOST_AUTO_TEST_CASE(pruned_trials_rank_after_complete_ones) {
  // Ten pruned trials that reached epoch 1 with great values, two complete ones: the good group
  // (gamma(12) = 2) is the complete trials, so TPE proposes near them, not near the pruned ones.
  auto spec = spec_of(sampler_kind::tpe, 5);
  spec.space = {spec.space[0]};
  std::vector<trial> trials;
  for (std::uint64_t i = 0; i < 12; ++i) {
    trial t;
    t.number = i;
    double lr = i < 10 ? 0.5 : 0.001;
    t.params = {{"opt", "lr", lr}};
    t.state = i < 10 ? trial_state::pruned : trial_state::complete;
    t.intermediate = {{1, i < 10 ? 0.99 : 0.5}};
    if (i >= 10)
      t.value = 0.5;
    trials.push_back(t);
  }
  auto p = propose(spec, true, trials, 12);
  BOOST_TEST(p[0].value.get<double>() < 0.05);
}

BOOST_AUTO_TEST_SUITE_END()
