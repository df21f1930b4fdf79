#include <boost/test/unit_test.hpp>

#include <stdexcept>

#include "apps/http_settings.hpp"
#include "testkit/env.hpp"

using namespace cdui::apps;
using cdui::test::scoped_env;

BOOST_AUTO_TEST_SUITE(http_settings_test)

BOOST_AUTO_TEST_CASE(reads_need_the_token_beyond_loopback_and_on_loopback_only_when_asked) {
  BOOST_TEST(!reads_need_token(true, ""));
  BOOST_TEST(!reads_need_token(true, "auto"));
  BOOST_TEST(reads_need_token(true, "on"));
  BOOST_TEST(reads_need_token(false, ""));
  BOOST_TEST(reads_need_token(false, "auto"));
  BOOST_TEST(reads_need_token(false, "on"));
}

BOOST_AUTO_TEST_CASE(a_read_token_setting_other_than_auto_or_on_stops_the_start) {
  // "off" included: beyond loopback there is no way to open the reads to anyone.
  for (auto bad : {"off", "On", "yes", "1"})
    BOOST_CHECK_THROW((void)reads_need_token(false, bad), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(the_limits_default_to_16_mib_10_s_and_32_connections) {
  auto limits = read_http_limits(std::nullopt, 64);
  BOOST_TEST(limits.max_body_bytes == std::size_t{16} << 20);
  BOOST_TEST(limits.read_deadline.count() == 10'000);
  BOOST_TEST(limits.max_connections_per_client == 32u);
  BOOST_TEST(limits.max_body_setting.find("--max-body-mb") != std::string::npos);
  BOOST_TEST(limits.max_body_setting.find(max_body_env) != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_environment_sets_the_limits_and_the_flag_wins_over_it) {
  scoped_env body{max_body_env, "2"};
  scoped_env deadline{read_deadline_env, "3"};
  scoped_env connections{max_connections_env, "5"};
  auto limits = read_http_limits(std::nullopt, 64);
  BOOST_TEST(limits.max_body_bytes == std::size_t{2} << 20);
  BOOST_TEST(limits.read_deadline.count() == 3'000);
  BOOST_TEST(limits.max_connections_per_client == 5u);
  BOOST_TEST(read_http_limits(std::size_t{7}, 64).max_body_bytes == std::size_t{7} << 20);
}

BOOST_AUTO_TEST_CASE(a_setting_that_is_not_a_whole_number_in_its_range_names_itself) {
  for (auto [var, value] : {std::pair{max_body_env, "0"}, std::pair{max_body_env, "1.5"},
                            std::pair{max_body_env, "2000"}, std::pair{read_deadline_env, "-1"},
                            std::pair{read_deadline_env, "ten"}, std::pair{max_connections_env, "65"}}) {
    scoped_env env{var, value};
    try {
      (void)read_http_limits(std::nullopt, 64);
      BOOST_ERROR(var << "=" << value << " was taken");
    } catch (const std::invalid_argument& e) {
      BOOST_TEST(std::string{e.what()}.find(var) == 0u, e.what());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
