// The dashboard's one-time sign-in codes and the browser sessions they open.
#include <boost/test/unit_test.hpp>

#include <set>

#include "apps/browser_sessions.hpp"

using namespace cdui::apps;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(browser_sessions_test)

namespace {
const auto t0 = browser_sessions::clock::time_point{} + 1000h;
}

BOOST_AUTO_TEST_CASE(a_code_opens_one_session_and_only_once) {
  browser_sessions sessions;
  auto code = sessions.new_code(t0);
  BOOST_TEST(code.size() == 64u);
  auto session = sessions.redeem(code, t0 + 1s);
  BOOST_REQUIRE(session);
  BOOST_TEST(session->id.size() == 64u);
  BOOST_TEST(session->csrf.size() == 64u);
  BOOST_TEST(session->id != session->csrf);
  BOOST_TEST(session->id != code);
  // Single use: the second visit of the same link finds nothing.
  BOOST_TEST(!sessions.redeem(code, t0 + 2s));
  auto found = sessions.find(session->id, t0 + 3s);
  BOOST_REQUIRE(found);
  BOOST_TEST(found->csrf == session->csrf);
}

BOOST_AUTO_TEST_CASE(signing_out_ends_the_session_once) {
  browser_sessions sessions;
  auto one = sessions.redeem(sessions.new_code(t0), t0);
  auto other = sessions.redeem(sessions.new_code(t0), t0);
  BOOST_REQUIRE(one && other);
  BOOST_TEST(sessions.end(one->id));
  BOOST_TEST(!sessions.find(one->id, t0 + 1s));
  BOOST_TEST(!sessions.end(one->id));
  BOOST_TEST(!sessions.end(""));
  BOOST_TEST(sessions.find(other->id, t0 + 1s).has_value());  // another browser stays signed in
}

BOOST_AUTO_TEST_CASE(a_code_expires_after_five_minutes) {
  browser_sessions sessions;
  auto late = sessions.new_code(t0);
  auto in_time = sessions.new_code(t0);
  BOOST_TEST(sessions.redeem(in_time, t0 + sign_in_link_lifetime - 1ms).has_value());
  BOOST_TEST(!sessions.redeem(late, t0 + sign_in_link_lifetime));
  BOOST_TEST(sign_in_link_lifetime.count() == 5);  // minutes
}

BOOST_AUTO_TEST_CASE(unknown_codes_and_cookies_find_nothing) {
  browser_sessions sessions;
  auto code = sessions.new_code(t0);
  BOOST_TEST(!sessions.redeem("", t0));
  BOOST_TEST(!sessions.redeem(code.substr(1), t0));
  BOOST_TEST(!sessions.find("", t0));
  BOOST_TEST(!sessions.find(code, t0));  // a code is no session
}

BOOST_AUTO_TEST_CASE(a_session_expires_after_its_lifetime) {
  browser_sessions sessions;
  auto session = sessions.redeem(sessions.new_code(t0), t0);
  BOOST_REQUIRE(session);
  BOOST_TEST(sessions.find(session->id, t0 + browser_session_lifetime - 1s).has_value());
  BOOST_TEST(!sessions.find(session->id, t0 + browser_session_lifetime));
}

BOOST_AUTO_TEST_CASE(codes_and_sessions_are_bounded_the_oldest_going_first) {
  browser_sessions sessions;
  std::vector<std::string> codes;
  for (std::size_t i = 0; i < max_sign_in_codes + 1; ++i)
    codes.push_back(sessions.new_code(t0 + std::chrono::milliseconds(i)));
  BOOST_TEST(!sessions.redeem(codes.front(), t0 + 1s));  // pushed out by the newest
  BOOST_TEST(sessions.redeem(codes.back(), t0 + 1s).has_value());

  std::vector<browser_session> opened;
  for (std::size_t i = 0; i < max_browser_sessions + 1; ++i)
    opened.push_back(*sessions.redeem(sessions.new_code(t0 + 2s + std::chrono::milliseconds(i)),
                                      t0 + 2s + std::chrono::milliseconds(i)));
  auto now = t0 + 10s;
  BOOST_TEST(!sessions.find(opened.front().id, now));
  BOOST_TEST(sessions.find(opened.back().id, now).has_value());
}

BOOST_AUTO_TEST_CASE(every_code_and_session_is_new) {
  browser_sessions sessions;
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    auto code = sessions.new_code(t0);
    auto s = sessions.redeem(code, t0);
    BOOST_TEST(seen.insert(code).second);
    BOOST_TEST(seen.insert(s->id).second);
    BOOST_TEST(seen.insert(s->csrf).second);
  }
}

BOOST_AUTO_TEST_SUITE_END()
