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

BOOST_AUTO_TEST_CASE(a_memory_budget_is_read_checked_and_written_back_the_same) {
  run_request r;
  auto err = policy::apply_options(
    {{"device", "sim:0"}, {"target", {{"memory_gib", 0.75}, {"memory_source", "estimate"}, {"wait", true}}}}, r);
  BOOST_TEST(err.empty(), err);
  BOOST_TEST(r.memory_bytes == 768LL * 1024 * 1024);
  BOOST_TEST(r.memory_source == "estimate");
  BOOST_TEST(r.has_wait);
  BOOST_TEST(r.wait);
  run_request again;
  BOOST_TEST(policy::apply_options(policy::options_json(r), again).empty());
  BOOST_TEST(again.memory_bytes == r.memory_bytes);
  BOOST_TEST(again.memory_source == "estimate");
  BOOST_TEST((again.has_wait && again.wait));

  auto why = [](const json& target) {
    run_request x;
    return policy::apply_options({{"target", target}}, x);
  };
  BOOST_TEST(why({{"memory_gib", 0}}).rfind("option 'target.memory_gib': must be a number of GiB above 0", 0) == 0u);
  BOOST_TEST(why({{"memory_gib", "6"}}).rfind("option 'target.memory_gib'", 0) == 0u);
  BOOST_TEST(why({{"memory_gib", 1e9}}).rfind("option 'target.memory_gib'", 0) == 0u);
  BOOST_TEST(why({{"memory_source", "guess"}, {"memory_gib", 1}}).rfind("option 'target.memory_source'", 0) == 0u);
  BOOST_TEST(why({{"memory_source", "estimate"}}) == "option 'target.memory_source': gives where "
             "target.memory_gib came from; give target.memory_gib too");
  BOOST_TEST(why({{"wait", "yes"}}) == "option 'target.wait': must be true or false, not \"yes\"");
}

BOOST_AUTO_TEST_CASE(a_device_set_across_workers_names_each_cards_worker_and_nothing_else_of_where) {
  auto with_set = [](json devices, json more = json::object()) {
    json target{{"devices", std::move(devices)}};
    target.update(more);
    return json{{"graph", {{"nodes", {{{"id", "a"}, {"type", "Dataset"}}}}}}, {"options", {{"target", target}}}};
  };
  BOOST_TEST(refusal(with_set({"w1/cuda:0", "w2/cuda:0"})).empty());
  BOOST_TEST(refusal(with_set({"w1/cuda:x"})).rfind("option 'target.devices[0]': ", 0) == 0u);
  BOOST_TEST(refusal(with_set({"w1/cuda:0", "bad name/cuda:0"})).rfind(
               "option 'target.devices[1]': 'bad name/cuda:0' does not start with a worker's name (", 0) == 0u);
  BOOST_TEST(refusal(with_set({"/cuda:0"})).rfind("option 'target.devices[0]': '/cuda:0' does not start", 0) == 0u);
  BOOST_TEST(refusal(with_set({"w1/cuda:0"}, {{"worker", "w1"}}))
             == "option 'target.devices': a device set across workers names each card's worker (w1/cuda:0); "
                "leave out option 'target.worker'");
}

BOOST_AUTO_TEST_SUITE_END()
