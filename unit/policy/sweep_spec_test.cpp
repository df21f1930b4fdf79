#include <boost/test/unit_test.hpp>

#include <cmath>
#include <set>

#include "actors/policy/sweep_spec.hpp"

using namespace cdui::policy;
using nlohmann::json;

namespace {

json J(const char* text) {
  return json::parse(text);
}

sweep_spec spec_of(const json& j) {
  auto parsed = parse_sweep_spec(j);
  if (auto* bad = std::get_if<std::string>(&parsed))
    BOOST_FAIL("refused: " << *bad);
  return std::get<sweep_spec>(parsed);
}

std::string refusal_of(const json& j) {
  auto parsed = parse_sweep_spec(j);
  auto* bad = std::get_if<std::string>(&parsed);
  BOOST_REQUIRE_MESSAGE(bad, "accepted: " << j.dump());
  return *bad;
}

std::vector<json> column(const std::vector<variant_params>& variants, std::size_t param) {
  std::vector<json> out;
  for (const auto& v : variants)
    out.push_back(v.at(param).value);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sweep_spec_test)

BOOST_AUTO_TEST_CASE(a_grid_is_the_cartesian_product_with_the_last_param_fastest) {
  auto spec = spec_of(J(R"({"method": "grid", "params": [{"node": "opt", "param": "lr", "values": [0.1, 0.01]},
                        {"node": "loader", "param": "batch_size", "values": [16, 32, 64]}]})"));
  BOOST_TEST(variant_count(spec) == 6u);
  auto v = expand(spec);
  BOOST_REQUIRE_EQUAL(v.size(), 6u);
  BOOST_TEST(column(v, 0) == (std::vector<json>{0.1, 0.1, 0.1, 0.01, 0.01, 0.01}), boost::test_tools::per_element());
  BOOST_TEST(column(v, 1) == (std::vector<json>{16, 32, 64, 16, 32, 64}), boost::test_tools::per_element());
  BOOST_TEST(params_json(v[4]).dump() == R"({"loader.batch_size":32,"opt.lr":0.01})");
}

BOOST_AUTO_TEST_CASE(a_grid_range_takes_count_points_on_its_scale) {
  auto spec = spec_of(J(R"({"method": "grid", "params": [{"node": "opt", "param": "lr", "min": 0.001, "max": 0.1,
                        "scale": "log", "count": 3}]})"));
  auto lr = column(expand(spec), 0);
  BOOST_REQUIRE_EQUAL(lr.size(), 3u);
  BOOST_TEST(lr[0].get<double>() == 0.001, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(lr[1].get<double>() == 0.01, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(lr[2].get<double>() == 0.1);
  auto linear = column(expand(spec_of(J(R"({"method": "grid", "params": [{"node": "m", "param": "p", "min": 0, "max": 1, "count": 5}]})"))), 0);
  BOOST_TEST(linear == (std::vector<json>{0.0, 0.25, 0.5, 0.75, 1.0}), boost::test_tools::per_element());
  BOOST_TEST(column(expand(spec_of(J(R"({"method": "grid", "params": [{"node": "m", "param": "p", "min": 2, "max": 9, "count": 1}]})"))), 0)
             == (std::vector<json>{2.0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_int_range_rounds_and_keeps_each_value_once) {
  auto spec = spec_of(J(R"({"method": "grid", "params": [{"node": "loader", "param": "batch_size", "min": 16, "max": 128,
                        "scale": "log", "type": "int", "count": 4}]})"));
  BOOST_TEST(column(expand(spec), 0) == (std::vector<json>{16, 32, 64, 128}), boost::test_tools::per_element());
  BOOST_TEST(expand(spec)[0][0].value.is_number_integer());
  // 1..3 in 5 points: 1, 1.5, 2, 2.5, 3 round to 1, 2, 2, 3, 3.
  auto few = spec_of(J(R"({"method": "grid", "params": [{"node": "m", "param": "p", "min": 1, "max": 3, "type": "int", "count": 5}]})"));
  BOOST_TEST(variant_count(few) == 3u);
  BOOST_TEST(column(expand(few), 0) == (std::vector<json>{1, 2, 3}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(random_draws_are_the_same_for_a_seed_and_differ_for_another) {
  auto body = J(R"({"method": "random", "samples": 50, "seed": 7, "params": [
    {"node": "opt", "param": "lr", "min": 1e-4, "max": 1e-1, "scale": "log"},
    {"node": "loader", "param": "batch_size", "values": [16, 32, 64]},
    {"node": "model", "param": "hidden", "min": 4, "max": 9, "type": "int"},
    {"node": "model", "param": "width", "min": 1, "max": 1000, "scale": "log", "type": "int"}]})");
  auto a = expand(spec_of(body));
  auto b = expand(spec_of(body));
  BOOST_REQUIRE_EQUAL(a.size(), 50u);
  for (std::size_t i = 0; i < a.size(); ++i)
    BOOST_TEST(params_json(a[i]) == params_json(b[i]));
  body["seed"] = 8;
  auto c = expand(spec_of(body));
  BOOST_TEST(params_json(a[0]) != params_json(c[0]));
  std::set<json> hidden;
  for (const auto& v : a) {
    auto lr = v[0].value.get<double>();
    BOOST_TEST((lr >= 1e-4 && lr <= 1e-1));
    BOOST_TEST(v[2].value.is_number_integer());
    hidden.insert(v[2].value);
    auto width = v[3].value.get<std::int64_t>();
    BOOST_TEST((width >= 1 && width <= 1000));
  }
  BOOST_TEST(hidden == (std::set<json>{4, 5, 6, 7, 8, 9}));  // every int of the range, bounds included
}

BOOST_AUTO_TEST_CASE(the_generator_gives_fixed_numbers_for_a_seed) {
  // SplitMix64's published first outputs for seed 0: the same with every standard library.
  sweep_random rng{0};
  BOOST_TEST(rng.next() == 0xe220a8397b1dcdafULL);
  BOOST_TEST(rng.next() == 0x6e789e6aa1b965f4ULL);
  sweep_random u{1};
  for (int i = 0; i < 1000; ++i) {
    auto x = u.uniform();
    BOOST_TEST((x >= 0.0 && x < 1.0));
    BOOST_TEST(u.below(3) < 3u);
  }
}

BOOST_AUTO_TEST_CASE(the_limit_refuses_a_larger_sweep_and_never_truncates) {
  auto spec = spec_of(J(R"({"method": "grid", "params": [{"node": "a", "param": "x", "min": 0, "max": 1, "count": 1000},
    {"node": "a", "param": "y", "min": 0, "max": 1, "count": 1000},
    {"node": "a", "param": "z", "min": 0, "max": 1, "count": 1000}]})"));
  BOOST_TEST(variant_count(spec) == 1'000'000'000u);
  BOOST_TEST(limit_refusal(variant_count(spec), default_max_sweep_runs)
             == "the sweep has 1000000000 variants, more than the 1000 a sweep may have "
                "(CODEFYUI_MAX_SWEEP_RUNS); nothing was queued: narrow the spec or raise the limit");
  BOOST_TEST(limit_refusal(1000, 1000).empty());
  BOOST_TEST(!limit_refusal(1001, 1000).empty());
  auto random = spec_of(J(R"({"method": "random", "samples": 5000, "params": [{"node": "a", "param": "x", "values": [1]}]})"));
  BOOST_TEST(variant_count(random) == 5000u);
}

BOOST_AUTO_TEST_CASE(each_bad_field_is_refused_by_name) {
  auto p = J(R"({"node": "opt", "param": "lr", "min": 0.1, "max": 1.0, "count": 2})");
  auto with = [&](const char* key, const json& value) {
    auto out = J(R"({"method": "grid", "params": [{"node": "a", "param": "b", "values": [1]}]})");
    auto q = p;
    q[key] = value;
    out["params"].push_back(q);
    return out;
  };
  BOOST_TEST(refusal_of(with("scale", "cubic")) == "spec.params[1].scale: must be \"linear\" or \"log\"");
  BOOST_TEST(refusal_of(with("type", "double")) == "spec.params[1].type: must be \"float\" or \"int\"");
  BOOST_TEST(refusal_of(with("min", "low")) == "spec.params[1].min: must be a number");
  BOOST_TEST(refusal_of(with("max", 0.01)) == "spec.params[1].max: must be at least min (0.1)");
  BOOST_TEST(refusal_of(with("count", 0)) == "spec.params[1].count: must be a whole number from 1 to 1000000");
  BOOST_TEST(refusal_of(with("node", "")) == "spec.params[1].node: must be a non-empty string");
  BOOST_TEST(refusal_of(with("colour", 1)).rfind("spec.params[1]: unknown field 'colour'", 0) == 0);
  BOOST_TEST(refusal_of(with("values", J("[1]"))) == "spec.params[1]: give either values or a range (min, max), not both ('min' with values)");
  BOOST_TEST(refusal_of(with("type", "int")) == "spec.params[1].min: must be a whole number for type \"int\"");
  auto log0 = with("scale", "log");
  log0["params"][1]["min"] = 0;
  BOOST_TEST(refusal_of(log0) == "spec.params[1].min: must be above 0 on a log scale");
  auto nocount = with("scale", "linear");
  nocount["params"][1].erase("count");
  BOOST_TEST(refusal_of(nocount) == "spec.params[1].count: a grid needs count for a range (how many points from min to max)");
  auto twice = with("param", "b");
  twice["params"][1]["node"] = "a";
  BOOST_TEST(refusal_of(twice) == "spec.params[1]: a.b is swept already by spec.params[0]");
  BOOST_TEST(refusal_of(J(R"({"method": "bayes"})")) == "spec.method: must be \"grid\" or \"random\"");
  BOOST_TEST(refusal_of(J(R"({"method": "grid", "params": []})")) == "spec.params: must be a list of at least one param");
  BOOST_TEST(refusal_of(J(R"({"method": "random", "params": [{"node": "a", "param": "b", "values": [1]}]})"))
             == "spec.samples: a random sweep needs samples, how many variants to draw");
  BOOST_TEST(refusal_of(J(R"({"method": "random", "samples": 0, "params": [{"node": "a", "param": "b", "values": [1]}]})"))
             == "spec.samples: must be a whole number of at least 1");
  BOOST_TEST(refusal_of(J(R"({"method": "grid", "samples": 3, "params": [{"node": "a", "param": "b", "values": [1]}]})"))
             == "spec.samples: only for method \"random\" (a grid takes every combination)");
  BOOST_TEST(refusal_of(J(R"({"method": "grid", "seed": -1, "params": [{"node": "a", "param": "b", "values": [1]}]})"))
             == "spec.seed: must be a whole number from 0 to 18446744073709551615");
  BOOST_TEST(refusal_of(J(R"({"method": "grid", "params": [{"node": "a", "param": "b", "values": []}]})"))
             == "spec.params[0].values: must be a list of at least one value");
  BOOST_TEST(refusal_of(json::array()) == "spec: must be an object {method, params, samples?, seed?}");
}

BOOST_AUTO_TEST_CASE(an_objective_needs_a_metric_and_a_direction) {
  auto ok = parse_objective(J(R"({"metric": "loop.loss", "direction": "max"})"));
  BOOST_REQUIRE(std::holds_alternative<sweep_objective>(ok));
  BOOST_TEST(std::get<sweep_objective>(ok).maximize);
  BOOST_TEST(std::get<std::string>(parse_objective(J(R"({"metric": "loss", "direction": "down"})")))
             == "objective.direction: must be \"min\" or \"max\"");
  BOOST_TEST(std::get<std::string>(parse_objective(J(R"({"direction": "min"})"))).rfind("objective.metric:", 0) == 0);
  // A metric's name of 1 MB was stored with its sweep (issue 33).
  auto named = [](std::size_t length) {
    return parse_objective(json{{"metric", std::string(length, 'm')}, {"direction", "min"}});
  };
  BOOST_TEST(std::holds_alternative<sweep_objective>(named(max_metric_name_length)));
  BOOST_TEST(std::get<std::string>(named(1 << 20))
             == "objective.metric: at most 256 bytes (a metric's name, or node.name), got 1048576");
}

BOOST_AUTO_TEST_CASE(the_spec_reads_back_the_same_from_its_json) {
  auto spec = spec_of(J(R"({"method": "random", "samples": 4, "seed": 3,
                        "params": [{"node": "a", "param": "x", "min": 1, "max": 8, "scale": "log", "type": "int"}]})"));
  auto again = spec_of(spec_json(spec));
  BOOST_TEST(spec_json(again) == spec_json(spec));
  BOOST_TEST(params_json(expand(again)[3]) == params_json(expand(spec)[3]));
}

BOOST_AUTO_TEST_CASE(a_param_is_set_in_its_node_and_an_unknown_node_is_named) {
  auto graph = J(R"({"nodes": [{"id": "opt", "type": "Optimizer"}, {"id": "loop", "type": "TrainingLoop", "params": {"epochs": 1}}]})");
  BOOST_TEST(set_node_param(graph, "opt", "lr", 0.5).empty());
  BOOST_TEST(graph["nodes"][0]["params"]["lr"] == 0.5);
  BOOST_TEST(set_node_param(graph, "loop", "epochs", 3).empty());
  BOOST_TEST(graph["nodes"][1]["params"]["epochs"] == 3);
  BOOST_TEST(set_node_param(graph, "optimizer", "lr", 1) == "the graph has no node 'optimizer' (its nodes: opt, loop)");
}

BOOST_AUTO_TEST_SUITE_END()
