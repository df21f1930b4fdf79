// The submit body's checks that need no server: a run's own device must name one exactly, and a
// name is measured in characters.
#include <boost/test/unit_test.hpp>

#include "actors/policy/run_options.hpp"

using namespace cdui;
using nlohmann::json;

namespace {

/// The refusal's sentence for `body`, empty when it is accepted.
std::string refusal(const json& body) {
  auto parsed = policy::parse_submission(body);
  auto* err = std::get_if<policy::submission_error>(&parsed);
  return err ? err->message : "";
}

json with_device(const std::string& device) {
  return {{"graph", {{"nodes", {{{"id", "a"}, {"type", "Dataset"}}}}}}, {"options", {{"device", device}}}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(run_options_test)

BOOST_AUTO_TEST_CASE(a_run_device_with_a_bad_index_is_refused_not_run_on_index_0) {
  for (const std::string device : {"sim:-1", "sim:+1", "sim: 1", "sim:99999999999999999999", "cuda:",
                                   "cuda:0:1", "cpu:1"}) {
    auto why = refusal(with_device(device));
    BOOST_TEST(why.rfind("option 'device': ", 0) == 0u, device << ": " << why);
  }
  BOOST_TEST(refusal(with_device("sim:-1")).find("'sim:-1' has no valid index") != std::string::npos);
  for (const std::string device : {"cpu", "auto", "sim", "sim:0", "sim:12", "cuda", "cuda:3", "mps:0"})
    BOOST_TEST(refusal(with_device(device)).empty(), device);
}

BOOST_AUTO_TEST_CASE(a_run_name_is_measured_in_characters_not_bytes) {
  json body{{"graph", {{"nodes", {{{"id", "a"}, {"type", "Dataset"}}}}}}};
  std::string e_acute = "\xc3\xa9";
  std::string name;
  for (int i = 0; i < 64; ++i)
    name += e_acute;  // 64 characters, 128 bytes
  body["name"] = name;
  BOOST_TEST(refusal(body).empty());
  body["name"] = name + e_acute;
  BOOST_TEST(refusal(body) == "field 'name' is 65 characters long; the most is 64");
}

BOOST_AUTO_TEST_SUITE_END()
