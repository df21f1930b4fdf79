// Which parameters train (runtime/trainable.hpp): what `freeze` entries match, the errors of bad
// `freeze` and `lora` params naming node and param, and the counts the static estimate uses.
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "runtime/estimate.hpp"
#include "runtime/trainable.hpp"
#include "unit/runtime/run_helpers.hpp"

using namespace cdui::runtime;
using nlohmann::json;

namespace {

/// Moons into Linear1 (2 -> 16), ReLU2, Linear3 (16 -> 2) with the Model params given.
json moons_with(const json& model_params) {
  auto doc = cdui::test::moons_graph_json(1);
  cdui::test::params(doc, "model").update(model_params);
  return doc;
}

/// The validation errors of a graph (none: it validated).
std::vector<graph_error> errors_of(const json& doc) {
  auto result = validate_graph(doc);
  if (auto* errors = std::get_if<std::vector<graph_error>>(&result))
    return *errors;
  return {};
}

/// The one error's message, checked to name the node and the param.
std::string only_error(const json& doc, const std::string& field) {
  auto errors = errors_of(doc);
  BOOST_REQUIRE_EQUAL(errors.size(), 1u);
  BOOST_TEST(errors[0].node == "model");
  BOOST_TEST(errors[0].field == field);
  BOOST_TEST(errors[0].message.find("node 'model' (Model): param '" + field + "'") == 0u, errors[0].message);
  return errors[0].message;
}

} // namespace

BOOST_AUTO_TEST_SUITE(trainable_test)

BOOST_AUTO_TEST_CASE(a_freeze_entry_is_a_layer_a_parameter_or_a_prefix_with_a_star) {
  auto freeze = json{"Linear1"};
  BOOST_TEST(frozen_by(freeze, "Linear1.weight"));
  BOOST_TEST(frozen_by(freeze, "Linear1.bias"));
  BOOST_TEST(!frozen_by(freeze, "Linear10.weight"));  // a layer name ends at the dot
  BOOST_TEST(frozen_by(json{"Linear1.bias"}, "Linear1.bias"));
  BOOST_TEST(!frozen_by(json{"Linear1.bias"}, "Linear1.weight"));
  BOOST_TEST(frozen_by(json{"Linear*"}, "Linear10.weight"));
  BOOST_TEST(!frozen_by(json{"Linear*"}, "LayerNorm2.weight"));
  BOOST_TEST(!frozen_by(json::array(), "Linear1.weight"));
}

BOOST_AUTO_TEST_CASE(lora_adapts_every_linear_layer_unless_it_names_some) {
  auto layers = json::parse(R"([{"type": "Linear", "out_features": 4}, {"type": "ReLU"},
                                {"type": "Linear", "out_features": 2}])");
  auto all = read_lora({{"rank", 2}}, layers);
  BOOST_TEST(all.on());
  BOOST_TEST(all.alpha == lora_settings::default_alpha);
  BOOST_TEST(all.scale() == 4.0);
  BOOST_TEST(all.layers == (std::vector<std::string>{"Linear1", "Linear3"}));
  auto some = read_lora({{"rank", 4}, {"alpha", 2}, {"layers", {"Linear3"}}}, layers);
  BOOST_TEST(some.adapts("Linear3"));
  BOOST_TEST(!some.adapts("Linear1"));
  BOOST_TEST(some.scale() == 0.5);
  BOOST_TEST(!read_lora(json::object(), layers).on());
}

BOOST_AUTO_TEST_CASE(good_freeze_and_lora_params_validate) {
  BOOST_TEST(errors_of(moons_with({{"freeze", {"Linear1", "Linear3.bias", "Linear3.b*"}}})).empty());
  BOOST_TEST(errors_of(moons_with({{"lora", {{"rank", 4}, {"alpha", 16}, {"layers", {"Linear3"}}}}})).empty());
  BOOST_TEST(errors_of(moons_with({{"lora", {{"rank", 1}}}, {"freeze", {"Linear1"}}})).empty());
}

BOOST_AUTO_TEST_CASE(a_freeze_entry_that_names_no_layer_is_refused) {
  auto message = only_error(moons_with({{"freeze", {"Linear2"}}}), "freeze");
  BOOST_TEST(message.find("'Linear2' names no layer or parameter of this model (its layers with parameters: "
                          "Linear1, Linear3)") != std::string::npos, message);
  only_error(moons_with({{"freeze", {"Linear1.gamma"}}}), "freeze");
  only_error(moons_with({{"freeze", {3}}}), "freeze");
}

BOOST_AUTO_TEST_CASE(freezing_everything_is_refused_unless_adapters_train) {
  auto message = only_error(moons_with({{"freeze", {"Linear*"}}}), "freeze");
  BOOST_TEST(message.find("freezes every parameter of the model, so nothing would train") != std::string::npos,
             message);
  BOOST_TEST(errors_of(moons_with({{"freeze", {"Linear*"}}, {"lora", {{"rank", 2}}}})).empty());
}

BOOST_AUTO_TEST_CASE(bad_lora_values_are_refused_with_what_they_take) {
  auto rank = only_error(moons_with({{"lora", {{"rank", 0}}}}), "lora");
  BOOST_TEST(rank.find("'rank' must be an integer >= 1, got 0") != std::string::npos, rank);
  auto missing = only_error(moons_with({{"lora", {{"alpha", 8}}}}), "lora");
  BOOST_TEST(missing.find("'rank' is missing") != std::string::npos, missing);
  auto alpha = only_error(moons_with({{"lora", {{"rank", 2}, {"alpha", 0}}}}), "lora");
  BOOST_TEST(alpha.find("'alpha' must be a number > 0, got 0") != std::string::npos, alpha);
  auto relu = only_error(moons_with({{"lora", {{"rank", 2}, {"layers", {"ReLU2"}}}}}), "lora");
  BOOST_TEST(relu.find("layer 'ReLU2' is ReLU; LoRA adapts Linear layers (this model's: Linear1, Linear3)")
             != std::string::npos, relu);
  auto absent = only_error(moons_with({{"lora", {{"rank", 2}, {"layers", {"Linear9"}}}}}), "lora");
  BOOST_TEST(absent.find("layer 'Linear9' is not in the model") != std::string::npos, absent);
  auto field = only_error(moons_with({{"lora", {{"rank", 2}, {"dropout", 0.1}}}}), "lora");
  BOOST_TEST(field.find("unknown field \"dropout\" (lora takes rank, alpha and layers)") != std::string::npos, field);
  auto kind = errors_of(moons_with({{"lora", 8}}));
  BOOST_REQUIRE_EQUAL(kind.size(), 1u);
  BOOST_TEST(kind[0].message == "node 'model' (Model): param 'lora' must be an object, got 8");
}

BOOST_AUTO_TEST_CASE(the_estimate_counts_gradients_and_state_for_what_trains) {
  // Linear1: 2 x 16 + 16 = 48 parameters, Linear3: 16 x 2 + 2 = 34. Adam keeps 8 bytes each.
  auto full = estimate_memory(cdui::test::require_valid(moons_with(json::object())));
  auto frozen = estimate_memory(cdui::test::require_valid(moons_with({{"freeze", {"Linear1"}}})));
  auto term = [](const memory_estimate& e, const std::string& name) {
    for (const auto& t : e.terms)
      if (t.name == name)
        return t.bytes;
    return std::int64_t{-1};
  };
  BOOST_TEST(full.parameters == 82);
  BOOST_TEST(frozen.parameters == 82);
  BOOST_TEST(frozen.trainable_parameters == 34);
  BOOST_TEST(term(frozen, "parameters") == 82 * 4);
  BOOST_TEST(term(frozen, "gradients") == 34 * 4);
  BOOST_TEST(term(frozen, "optimizer_state") == 34 * 8);
  // LoRA rank 2 on both: A 2 x 2 + B 16 x 2 on Linear1, A 2 x 16 + B 2 x 2 on Linear3 = 72 adapter
  // parameters; the base weights freeze.
  auto lora = estimate_memory(cdui::test::require_valid(moons_with({{"lora", {{"rank", 2}}}})));
  BOOST_TEST(lora.parameters == 82 + 72);
  BOOST_TEST(lora.trainable_parameters == 72);
  BOOST_TEST(term(lora, "gradients") == 72 * 4);
  BOOST_TEST(term(lora, "optimizer_state") == 72 * 8);
}

BOOST_AUTO_TEST_SUITE_END()
