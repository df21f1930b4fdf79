#include <boost/test/unit_test.hpp>

#include "apps/param_overrides.hpp"
#include "testkit/graphs.hpp"

using namespace cdui::apps;
using nlohmann::json;

BOOST_AUTO_TEST_SUITE(param_overrides_test)

namespace {

param_override parsed(const char* text) {
  auto p = parse_override(text);
  BOOST_REQUIRE_MESSAGE(std::holds_alternative<param_override>(p), text);
  return std::get<param_override>(p);
}

std::string refusal(const char* text) {
  auto p = parse_override(text);
  BOOST_REQUIRE_MESSAGE(std::holds_alternative<std::string>(p), text);
  return std::get<std::string>(p);
}

} // namespace

BOOST_AUTO_TEST_CASE(a_value_is_json_when_it_parses_else_a_string) {
  auto o = parsed("loader.batch_size=512");
  BOOST_TEST(o.node == "loader");
  BOOST_TEST(o.param == "batch_size");
  BOOST_TEST(o.value == json(512));
  BOOST_TEST(parsed("opt.lr=0.5").value == json(0.5));
  BOOST_TEST(parsed("loader.shuffle=false").value == json(false));
  BOOST_TEST(parsed("opt.name=adam").value == json("adam"));
  BOOST_TEST(parsed("opt.name=\"adam\"").value == json("adam"));
  BOOST_TEST(parsed("loop.device=sim:0").value == json("sim:0"));
  BOOST_TEST(parsed("model.layers=[1,2]").value == json::array({1, 2}));
  BOOST_TEST(parsed("data.path=").value == json(""));
  BOOST_TEST(parsed("data.label=a=b").value == json("a=b"));
}

BOOST_AUTO_TEST_CASE(the_last_dot_before_the_equals_splits_node_and_param) {
  auto o = parsed("block.1.dropout=0.1");
  BOOST_TEST(o.node == "block.1");
  BOOST_TEST(o.param == "dropout");
}

BOOST_AUTO_TEST_CASE(a_malformed_override_says_the_form) {
  BOOST_TEST(refusal("loader.batch_size").find("no '='") != std::string::npos);
  BOOST_TEST(refusal("batch_size=3").find("NODE.PARAM=VALUE") != std::string::npos);
  BOOST_TEST(refusal(".batch_size=3").find("NODE.PARAM=VALUE") != std::string::npos);
  BOOST_TEST(refusal("loader.=3").find("NODE.PARAM=VALUE") != std::string::npos);
  BOOST_TEST(refusal("loader.name=\xff").find("UTF-8") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(overrides_set_params_later_ones_winning_and_add_params_not_written) {
  auto graph = cdui::test::moons_graph_json({});
  auto why = apply_overrides(graph, {parsed("loader.batch_size=512"), parsed("loop.epochs=3"),
                                     parsed("loop.epochs=4"), parsed("loss.kind=mse")});
  BOOST_TEST(why.empty(), why);
  for (const auto& n : graph["nodes"]) {
    if (n["id"] == "loader")
      BOOST_TEST(n["params"]["batch_size"] == json(512));
    if (n["id"] == "loop")
      BOOST_TEST(n["params"]["epochs"] == json(4));
    if (n["id"] == "loss")  // written without params
      BOOST_TEST(n["params"]["kind"] == json("mse"));
  }
}

BOOST_AUTO_TEST_CASE(an_unknown_node_is_refused_naming_it_and_the_graphs_nodes) {
  auto graph = cdui::test::moons_graph_json({});
  auto before = graph;
  auto why = apply_overrides(graph, {parsed("loadr.batch_size=2")});
  BOOST_TEST(why == "--set 'loadr.batch_size': the graph has no node 'loadr' (its nodes: data, "
                    "loader, model, loss, opt, loop)");
}

BOOST_AUTO_TEST_CASE(a_graph_of_another_shape_is_refused_not_crashed_on) {
  for (auto text : {"null", "[]", R"({"nodes": 3})", R"({"nodes": [{"id": "a", "params": 3}]})",
                    R"({"nodes": [{"id": 7}, 3]})"}) {
    auto graph = json::parse(text);
    auto bad = graph;
    BOOST_TEST(!apply_overrides(graph, {parsed("a.b=1")}).empty(), bad.dump());
  }
  auto graph = json::array();
  BOOST_TEST(apply_overrides(graph, {}).empty());  // nothing to do
}

BOOST_AUTO_TEST_SUITE_END()
