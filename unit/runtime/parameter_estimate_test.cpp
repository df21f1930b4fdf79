// The parameter-count estimator (runtime/parameter_estimate.hpp): the seeds' own figures (the
// table in docs/training-memory.md, "From a parameter count"), the same terms as the graph estimate
// on a graph's model, and the refusals of bad input. The seeds' "GB" are 1024^3 bytes.
#include <cmath>

#include <boost/test/unit_test.hpp>

#include "runtime/estimate.hpp"
#include "runtime/parameter_estimate.hpp"
#include "unit/runtime/run_helpers.hpp"

using namespace cdui;
using nlohmann::json;

namespace {

runtime::parameter_estimate estimate(const json& fields) {
  auto read = runtime::read_parameter_request(fields);
  if (auto* e = std::get_if<runtime::request_error>(&read))
    BOOST_FAIL(e->field + " " + e->message);
  return runtime::estimate_from_parameters(std::get<runtime::parameter_request>(read));
}

std::int64_t term(const runtime::parameter_estimate& e, const std::string& name) {
  for (const auto& t : e.terms)
    if (t.name == name)
      return t.bytes;
  return -1;
}

/// Bytes in the seeds' GB with two decimals, as round(total_bytes / 1024**3, 2) prints them:
/// 11.18 GB as 1118.
std::int64_t hundredths_of_gb(std::int64_t bytes) {
  return std::llround(static_cast<double>(bytes) / (1LL << 30) * 100);
}

/// Whole GB, as the table's rows from prose give them: 104 GB.
std::int64_t whole_gb(std::int64_t bytes) {
  return std::llround(static_cast<double>(bytes) / (1LL << 30));
}

runtime::request_error refusal(const json& fields) {
  auto read = runtime::read_parameter_request(fields);
  auto* e = std::get_if<runtime::request_error>(&read);
  BOOST_REQUIRE_MESSAGE(e != nullptr, fields.dump() << " was taken");
  return *e;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(parameter_estimate_test)

BOOST_AUTO_TEST_CASE(seed_002_table_bf16_adam_and_adam8bit) {
  // memory_estimate(parameters, bytes_per_param=2, optimiser="adam"):
  //  125M:   1.40 GB     0.70 GB
  //    1B:  11.18 GB     5.59 GB
  //    7B:  78.23 GB    39.12 GB
  struct row {
    const char* parameters;
    std::int64_t adam;
    std::int64_t adam8bit;
  };
  for (const auto& [n, adam, adam8bit] : {row{"125M", 140, 70}, {"1B", 1118, 559}, {"7B", 7823, 3912}}) {
    BOOST_TEST_CONTEXT(n) {
      auto e = estimate({{"parameters", n}, {"precision", "bf16"}, {"optimizer", "adam"}});
      BOOST_TEST(hundredths_of_gb(e.total()) == adam);
      e = estimate({{"parameters", n}, {"precision", "bf16"}, {"optimizer", "adam8bit"}});
      BOOST_TEST(hundredths_of_gb(e.total()) == adam8bit);
    }
  }
  // The optimizer state's bytes per parameter: adamw as adam, sgd_momentum 4, sgd 0.
  auto bf16 = [](const char* optimizer) {
    return estimate({{"parameters", 1e9}, {"precision", "bf16"}, {"optimizer", optimizer}});
  };
  BOOST_TEST(bf16("adamw").total() == bf16("adam").total());
  BOOST_TEST(term(bf16("adam"), "optimizer_state") == 8 * 1'000'000'000LL);
  BOOST_TEST(term(bf16("sgd_momentum"), "optimizer_state") == 4 * 1'000'000'000LL);
  BOOST_TEST(term(bf16("sgd"), "optimizer_state") == 0);
  BOOST_TEST(term(bf16("adam8bit"), "optimizer_state") == 2 * 1'000'000'000LL);
}

BOOST_AUTO_TEST_CASE(seed_004_seven_billion_rows) {
  // "Fully fine-tuning a 7B model in fp32 with AdamW: 104 GB, before any activations."
  auto full = estimate({{"parameters", "7e9"}, {"precision", "fp32"}, {"optimizer", "adamw"}});
  BOOST_TEST(whole_gb(full.total()) == 104);
  // "training with AdamW needs about four times the memory of the model itself"
  BOOST_TEST(full.total() == 4 * term(full, "parameters"));

  // "Same, with fp16 weights: 52 GB." Every copy in fp16, the optimizer's too.
  auto half = estimate({{"parameters", "7e9"}, {"precision", "fp16"}, {"optimizer", "adamw"},
                        {"state_precision", "fp16"}});
  BOOST_TEST(whole_gb(half.total()) == 52);

  // "Loading it just to make predictions, in fp16: 13 GB." The weights term.
  BOOST_TEST(whole_gb(term(half, "parameters")) == 13);

  // "LoRA, training 0.2% of the parameters: 13 GB plus 0.08 GB."
  auto lora = estimate({{"parameters", "7e9"}, {"precision", "fp16"}, {"optimizer", "adamw"},
                        {"state_precision", "fp16"}, {"trainable", 0.002}});
  BOOST_TEST(lora.trainable_parameters == 14'000'000);
  BOOST_TEST(whole_gb(term(lora, "parameters")) == 13);
  BOOST_TEST(hundredths_of_gb(term(lora, "gradients") + term(lora, "optimizer_state")) == 8);
}

BOOST_AUTO_TEST_CASE(only_the_trainable_share_has_gradients_and_state) {
  auto all = estimate({{"parameters", "1B"}});
  auto some = estimate({{"parameters", "1B"}, {"trainable", "10%"}});
  BOOST_TEST(term(some, "parameters") == term(all, "parameters"));
  BOOST_TEST(term(some, "gradients") * 10 == term(all, "gradients"));
  BOOST_TEST(term(some, "optimizer_state") * 10 == term(all, "optimizer_state"));
  BOOST_TEST(has(some.terms[1].detail, "100,000,000 trainable parameters (10%)"), some.terms[1].detail);
}

BOOST_AUTO_TEST_CASE(the_same_terms_as_the_graph_estimate_of_a_model) {
  // One definition of bytes per number and of each optimizer's state: a graph's model counted by
  // the graph estimate and by its parameter count alone gives the same persistent terms.
  for (const auto& [optimizer, momentum, word] :
       {std::tuple{"adamw", 0.0, "adamw"}, {"adam", 0.0, "adam"}, {"sgd", 0.9, "sgd_momentum"},
        {"sgd", 0.0, "sgd"}, {"rmsprop", 0.0, "rmsprop"}, {"rmsprop", 0.9, "rmsprop_momentum"}}) {
    BOOST_TEST_CONTEXT(word) {
      test::sized_graph g;
      g.width = 64;
      g.optimizer = optimizer;
      g.momentum = momentum;
      auto graph = runtime::estimate_memory(test::require_valid(test::sized_graph_json(g)));
      auto counted = estimate({{"parameters", graph.parameters}, {"optimizer", word}});
      for (const auto* name : {"parameters", "gradients", "optimizer_state"}) {
        std::int64_t bytes = -1;
        for (const auto& t : graph.terms)
          if (t.name == name)
            bytes = t.bytes;
        BOOST_TEST(term(counted, name) == bytes, name);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(json_in_the_graph_estimates_shape) {
  auto e = estimate({{"parameters", 7e9}, {"precision", "bf16"}, {"trainable", 0.002}});
  auto j = runtime::to_json(e);
  std::int64_t sum = 0;
  for (const auto& t : j["terms"])
    sum += t["bytes"].get<std::int64_t>();
  BOOST_TEST(j["total_bytes"].get<std::int64_t>() == sum);
  BOOST_TEST(j["memory_source"] == "estimate");
  BOOST_TEST(j["rough"].is_null());
  BOOST_TEST(j["parameters"] == 7'000'000'000LL);
  BOOST_TEST(j["precision"] == "bf16");
  BOOST_TEST(j["optimizer"] == "adamw");  // the Optimizer node's default
  BOOST_TEST(j["state_precision"] == "fp32");
  BOOST_TEST(j["trainable_parameters"] == 14'000'000);
  BOOST_TEST(j["terms"].size() == 3);
}

BOOST_AUTO_TEST_CASE(bad_input_is_refused_naming_the_field_and_what_it_takes) {
  for (const json& bad : std::vector<json>{"abc", "-5", -5, 0, "7X", "nan", "inf", 0.5, "2e15", true, " 7"}) {
    auto e = refusal({{"parameters", bad}});
    BOOST_TEST(e.field == "parameters", bad.dump());
    BOOST_TEST(has(e.message, "must be"), e.message);
  }
  BOOST_TEST(refusal({{"parameters", "abc"}}).message
             == "must be a number of parameters such as 7e9, 7000000000 or 7B, got 'abc'");
  BOOST_TEST(refusal({{"parameters", -5}}).message == "must be at least 1, got -5");
  BOOST_TEST(refusal(json::object()).field == "parameters");

  for (const json& bad : std::vector<json>{0, -0.1, 1.5, "x", "150%"}) {
    auto e = refusal({{"parameters", 1e9}, {"trainable", bad}});
    BOOST_TEST(e.field == "trainable", bad.dump());
    BOOST_TEST(has(e.message, "more than 0 and at most 1"), e.message);
  }
  auto e = refusal({{"parameters", 1e9}, {"precision", "fp8"}});
  BOOST_TEST(e.field == "precision");
  BOOST_TEST(e.message == "must be one of fp32, bf16, fp16, got 'fp8'");
  e = refusal({{"parameters", 1e9}, {"optimizer", "lion"}});
  BOOST_TEST(e.field == "optimizer");
  BOOST_TEST(e.message == "must be one of adam, adamw, sgd, sgd_momentum, rmsprop, rmsprop_momentum, "
                          "adam8bit, got 'lion'");
  e = refusal({{"parameters", 1e9}, {"state_precision", "int4"}});
  BOOST_TEST(e.field == "state_precision");
  e = refusal({{"parameters", 1e9}, {"optimizer", "adam8bit"}, {"state_precision", "fp16"}});
  BOOST_TEST(e.field == "state_precision");
  BOOST_TEST(has(e.message, "8-bit"), e.message);
}

BOOST_AUTO_TEST_SUITE_END()
