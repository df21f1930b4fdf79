#include <boost/test/unit_test.hpp>

#include "devices/device.hpp"

using namespace cdui::devices;

namespace {

resolved_device resolve(const std::string& text, host_devices host) {
  auto parsed = parse_device(text);
  BOOST_REQUIRE(std::holds_alternative<device_spec>(parsed));
  return resolve_device(std::get<device_spec>(parsed), host);
}

host_devices two_cards() {
  host_devices h;
  h.cuda_count = 2;
  return h;
}

} // namespace

BOOST_AUTO_TEST_SUITE(device_test)

BOOST_AUTO_TEST_CASE(well_formed_strings_parse) {
  auto cuda1 = std::get<device_spec>(parse_device("cuda:1"));
  BOOST_TEST((cuda1.kind == device_kind::cuda));
  BOOST_TEST(*cuda1.index == 1);
  BOOST_TEST(!cuda1.malformed);
  BOOST_TEST(!std::get<device_spec>(parse_device("cuda")).index.has_value());
  BOOST_TEST((std::get<device_spec>(parse_device("auto")).kind == device_kind::auto_select));
  BOOST_TEST((std::get<device_spec>(parse_device("mps:0")).kind == device_kind::mps));
  BOOST_TEST((std::get<device_spec>(parse_device("sim:3")).kind == device_kind::sim));
  BOOST_TEST((std::get<device_spec>(parse_device("cpu")).kind == device_kind::cpu));
}

BOOST_AUTO_TEST_CASE(a_cuda_prefix_with_a_bad_index_is_still_a_cuda_request) {
  for (auto text : {"cuda:", "cuda:abc", "cuda:0:1", "cuda: 0", "cuda:-1"}) {
    auto parsed = parse_device(text);
    BOOST_REQUIRE(std::holds_alternative<device_spec>(parsed));
    BOOST_TEST((std::get<device_spec>(parsed).kind == device_kind::cuda));
    BOOST_TEST(std::get<device_spec>(parsed).malformed);
  }
}

BOOST_AUTO_TEST_CASE(strings_that_name_no_device_are_errors) {
  for (auto text : {"gpu", "", "CUDA", "cudax", "cpu:1", "tpu:0"}) {
    auto parsed = parse_device(text);
    BOOST_REQUIRE(std::holds_alternative<device_parse_error>(parsed));
    BOOST_TEST(std::get<device_parse_error>(parsed).message.find("unknown device") == 0u);
  }
}

BOOST_AUTO_TEST_CASE(bad_or_missing_indexes_fall_back_to_the_current_card_not_the_cpu) {
  auto host = two_cards();
  host.current_cuda = 1;
  for (auto text : {"cuda:3", "cuda:abc", "cuda:", "cuda: 0"}) {
    auto r = resolve(text, host);
    BOOST_TEST(r.name == "cuda:1");
    BOOST_REQUIRE(r.fallback_warning.has_value());
    BOOST_TEST(r.fallback_warning->find("2 ") != std::string::npos);  // names the count
  }
  BOOST_TEST(resolve("cuda:0", host).name == "cuda:0");
  BOOST_TEST(!resolve("cuda:0", host).fallback_warning.has_value());
  BOOST_TEST(resolve("cuda", host).name == "cuda:1");
}

BOOST_AUTO_TEST_CASE(an_accelerator_the_host_lacks_falls_back_to_the_cpu_with_a_warning) {
  host_devices none;
  for (auto text : {"cuda", "cuda:0", "mps", "sim:0"}) {
    auto r = resolve(text, none);
    BOOST_TEST(r.name == "cpu");
    BOOST_REQUIRE(r.fallback_warning.has_value());
    BOOST_TEST(r.fallback_warning->find("runs on cpu") != std::string::npos);
  }
  BOOST_TEST(resolve("auto", none).name == "cpu");
  BOOST_TEST(resolve("auto", two_cards()).name == "cuda:0");
}

BOOST_AUTO_TEST_CASE(a_worker_runs_fallback_names_its_cards_in_the_seeds_words) {
  BOOST_TEST(worker_run_fallback("cuda:1", {{"cuda:0", "cuda:1"}}, "cuda:0")
             == "is set to device cuda:1; this run has 1 card (cuda:0 = the worker's cuda:1), so when "
                "it executes, it runs on cuda:0.");
  BOOST_TEST(worker_run_fallback("cuda:5", {{"cuda:0", "cuda:2"}, {"cuda:1", "cuda:0"}}, "cuda:0")
             == "is set to device cuda:5; this run has 2 cards (cuda:0 = the worker's cuda:2, cuda:1 = "
                "the worker's cuda:0), so when it executes, it runs on cuda:0.");
  // A run on the worker's CPU has no card.
  BOOST_TEST(worker_run_fallback("cuda", {{"cpu", "cpu"}}, "cpu")
             == "is set to device cuda; this run has no card, so when it executes, it runs on cpu.");
}

BOOST_AUTO_TEST_SUITE_END()
