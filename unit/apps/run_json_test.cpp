#include <boost/test/unit_test.hpp>

#include "apps/run_json.hpp"

using namespace cdui;
using namespace cdui::apps;

BOOST_AUTO_TEST_SUITE(run_json_test)

BOOST_AUTO_TEST_CASE(the_run_object_reads_back_to_the_same_run) {
  run_info r;
  r.id = "aaaaaaaa";
  r.name = "m";
  r.status = run_status::failed;
  r.queue_key = "w/sim:0";
  const std::int64_t t0 = 1'796'107'300'000;
  r.created_ms = t0;
  r.queue_position = 0;
  r.error = "e";
  r.started_ms = t0 + 1;
  r.finished_ms = t0 + 2;
  r.final_metrics = R"({"loop":{"loss":0.25}})";
  r.options = R"({"seed":3})";
  auto back = run_from_json(run_json(r));
  BOOST_TEST(back.id == r.id);
  BOOST_TEST(back.status == r.status);
  BOOST_TEST(back.queue_key == r.queue_key);
  BOOST_TEST(back.error == r.error);
  BOOST_TEST(back.started_ms == r.started_ms);
  BOOST_TEST(back.finished_ms == r.finished_ms);
  BOOST_TEST(back.final_metrics == r.final_metrics);
  BOOST_TEST(back.options == r.options);
  // Another server's answer of any shape reads as a run with defaults, not an exception.
  for (auto text : {"null", "[]", R"({"run_id": 3, "status": "weird", "created_ms": "x"})"})
    BOOST_CHECK_NO_THROW((void)run_from_json(nlohmann::json::parse(text)));
}

BOOST_AUTO_TEST_SUITE_END()
