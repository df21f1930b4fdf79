#include <boost/test/unit_test.hpp>

#include "actors/policy/sweep_request.hpp"

using namespace cdui;
using namespace cdui::policy;
using nlohmann::json;

namespace {

json body() {
  return json::parse(R"({"graph": {"nodes": [{"id": "opt", "type": "Optimizer", "params": {"lr": 0.1}}]},
    "name": "lr",
    "spec": {"method": "grid", "params": [{"node": "opt", "param": "lr", "values": [0.1, 0.2]}]},
    "objective": {"metric": "loss", "direction": "min"},
    "options": {"seed": 3, "target": {"worker": "any"}}})");
}

std::string refusal_of(const json& b) {
  auto parsed = parse_sweep_body(b);
  auto* bad = std::get_if<submission_error>(&parsed);
  BOOST_REQUIRE(bad);
  return bad->message;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sweep_request_test)

BOOST_AUTO_TEST_CASE(a_body_gives_every_variant_the_options_and_its_own_graph) {
  auto parsed = parse_sweep_body(body());
  BOOST_REQUIRE(std::holds_alternative<sweep_request>(parsed));
  auto& r = std::get<sweep_request>(parsed);
  BOOST_TEST(r.base.worker == "any");
  BOOST_TEST(r.base.seed == 3u);
  auto runs = variant_runs(r.base, expand(r.spec), "lr");
  BOOST_REQUIRE(std::holds_alternative<std::vector<run_request>>(runs));
  auto& v = std::get<std::vector<run_request>>(runs);
  BOOST_REQUIRE_EQUAL(v.size(), 2u);
  BOOST_TEST(v[1].name == "lr #1");
  BOOST_TEST(v[1].worker == "any");
  BOOST_TEST(json::parse(v[1].graph_json)["nodes"][0]["params"]["lr"] == 0.2);
  BOOST_TEST(json::parse(v[0].graph_json)["nodes"][0]["params"]["lr"] == 0.1);
}

BOOST_AUTO_TEST_CASE(an_unknown_node_is_refused_naming_the_spec_param) {
  auto b = body();
  b["spec"]["params"][0]["node"] = "optimizer";
  auto r = std::get<sweep_request>(parse_sweep_body(b));
  auto runs = variant_runs(r.base, expand(r.spec), "x");
  BOOST_TEST(std::get<std::string>(runs)
             == "spec.params[0].node: the graph has no node 'optimizer' (its nodes: opt)");
}

BOOST_AUTO_TEST_CASE(bad_fields_are_refused_by_name) {
  auto b = body();
  b["budget"] = 1;
  BOOST_TEST(refusal_of(b) == "field 'budget' is not known (known: graph, name, spec, objective, options)");
  b = body();
  b.erase("spec");
  BOOST_TEST(refusal_of(b) == "field 'spec' is missing");
  b = body();
  b["objective"]["direction"] = "up";
  BOOST_TEST(refusal_of(b) == "objective.direction: must be \"min\" or \"max\"");
  b = body();
  b["options"] = {{"lane", "interactive"}};
  BOOST_TEST(refusal_of(b).rfind("option 'lane': a sweep's runs are queued runs", 0) == 0, refusal_of(b));
  b = body();
  b["spec"]["params"][0]["values"] = 3;
  BOOST_TEST(refusal_of(b) == "spec.params[0].values: must be a list of at least one value");
  b = body();
  b.erase("graph");
  auto parsed = parse_sweep_body(b);
  BOOST_TEST(std::get<submission_error>(parsed).unprocessable);
}

BOOST_AUTO_TEST_SUITE_END()
