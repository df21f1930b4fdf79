#include <boost/test/unit_test.hpp>

#include "actors/policy/slot_limits.hpp"

using cdui::policy::parse_slot_limits;

BOOST_AUTO_TEST_SUITE(slot_limits_test)

BOOST_AUTO_TEST_CASE(entries_are_trimmed_lower_cased_and_canonical) {
  auto parsed = parse_slot_limits(" CUDA:0 = 2 ,cpu=8, mps=3,sim=2", 0);
  BOOST_TEST(parsed.warnings.empty());
  BOOST_TEST(parsed.limits.size() == 4u);
  BOOST_TEST(parsed.limits["cuda:0"] == 2);
  BOOST_TEST(parsed.limits["cpu"] == 8);
  BOOST_TEST(parsed.limits["mps:0"] == 3);
  BOOST_TEST(parsed.limits["sim:0"] == 2);
}

BOOST_AUTO_TEST_CASE(bare_cuda_means_the_current_card) {
  auto parsed = parse_slot_limits("cuda=4", 1);
  BOOST_TEST(parsed.limits["cuda:1"] == 4);
}

BOOST_AUTO_TEST_CASE(an_entry_is_split_on_its_last_equals_sign) {
  auto parsed = parse_slot_limits("gpu-box/cuda:1=3,a=b=2");
  BOOST_TEST(parsed.limits["gpu-box/cuda:1"] == 3);
  BOOST_TEST(parsed.limits["a=b"] == 2);
}

BOOST_AUTO_TEST_CASE(a_workers_name_keeps_its_case_and_its_device_is_canonical) {
  auto parsed = parse_slot_limits(" Big-Box/SIM = 3, gpu-box/CUDA=2", 1);
  BOOST_TEST(parsed.warnings.empty());
  BOOST_TEST(parsed.limits["Big-Box/sim:0"] == 3);
  BOOST_TEST(parsed.limits["gpu-box/cuda:0"] == 2);  // a worker's bare cuda: its first card
}

BOOST_AUTO_TEST_CASE(bad_entries_are_skipped_with_a_warning_and_the_rest_apply) {
  auto parsed = parse_slot_limits("cpu,=3,sim:0=two,sim:1=0,sim:2=-1,sim:3=1.5,cuda:0=2,,");
  BOOST_TEST(parsed.limits.size() == 1u);
  BOOST_TEST(parsed.limits["cuda:0"] == 2);
  BOOST_REQUIRE(parsed.warnings.size() == 6u);
  BOOST_TEST(parsed.warnings[0].find("'cpu': it has no '='") != std::string::npos);
  BOOST_TEST(parsed.warnings[1].find("empty") != std::string::npos);
  BOOST_TEST(parsed.warnings[2].find("'two' is not an integer") != std::string::npos);
  BOOST_TEST(parsed.warnings[3].find("at least 1") != std::string::npos);
  BOOST_TEST(parsed.warnings[4].find("at least 1") != std::string::npos);
  BOOST_TEST(parsed.warnings[5].find("'1.5' is not an integer") != std::string::npos);
  BOOST_TEST(parsed.warnings[0].find("CODEFYUI_RUN_QUEUE_MAX_CONCURRENT") == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
