// Who may read and change what: the session token, and the dashboard's cookie with its anti-CSRF
// header. Plain C++: the headers go in, the decision comes out.
#include <boost/test/unit_test.hpp>

#include "apps/http_access.hpp"
#include "apps/http_api.hpp"

using namespace cdui::apps;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(http_access_test)

namespace {

const auto now = browser_sessions::clock::time_point{} + 1000h;
const std::string token(64, 'a');

struct fixture {
  browser_sessions sessions;
  browser_session signed_in = *sessions.redeem(sessions.new_code(now), now);
  access_rules rules{token, false, "cdui_session_8765", &sessions};

  access_decision change(request_credentials c) const { return check_access(c, request_kind::change, rules, now); }
  access_decision read(request_credentials c) const { return check_access(c, request_kind::read, rules, now); }
  std::string cookie() const { return "theme=dark; cdui_session_8765=" + signed_in.id; }
};

} // namespace

BOOST_FIXTURE_TEST_CASE(the_token_header_allows_everything, fixture) {
  BOOST_TEST(change({token, "", ""}).allowed);
  rules.reads_need_token = true;
  BOOST_TEST(read({token, "", ""}).allowed);
  auto wrong = change({std::string(64, 'b'), "", ""});
  BOOST_TEST(!wrong.allowed);
  BOOST_TEST(wrong.refusal == token_refusal);
}

BOOST_FIXTURE_TEST_CASE(reads_need_nothing_on_loopback, fixture) {
  BOOST_TEST(read({"", "", ""}).allowed);
  BOOST_TEST(read({"", "", no_csrf}).allowed);
}

BOOST_FIXTURE_TEST_CASE(an_api_client_without_the_token_is_told_about_the_token, fixture) {
  auto a = change({"", "", ""});
  BOOST_TEST(!a.allowed);
  BOOST_TEST(a.refusal == token_refusal);
}

BOOST_FIXTURE_TEST_CASE(the_page_without_a_sign_in_is_told_how_to_sign_in, fixture) {
  auto a = change({"", "", no_csrf});
  BOOST_TEST(!a.allowed);
  BOOST_TEST(a.refusal == sign_in_refusal);
  BOOST_TEST(a.refusal.find("cdui ui") != std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(the_cookie_with_its_csrf_header_may_change_things, fixture) {
  BOOST_TEST(change({"", cookie(), signed_in.csrf}).allowed);
}

BOOST_FIXTURE_TEST_CASE(the_cookie_alone_changes_nothing, fixture) {
  // What a form or an image of another site can make the browser send: the cookie, no header.
  for (const auto& csrf : {std::string{}, std::string{no_csrf}, std::string(64, 'c'),
                           signed_in.csrf.substr(1)}) {
    auto a = change({"", cookie(), csrf});
    BOOST_TEST(!a.allowed);
    BOOST_TEST(a.refusal == csrf_refusal);
  }
}

BOOST_FIXTURE_TEST_CASE(another_sessions_csrf_value_does_not_match, fixture) {
  auto other = *sessions.redeem(sessions.new_code(now), now);
  BOOST_TEST(!change({"", cookie(), other.csrf}).allowed);
  BOOST_TEST(change({"", "cdui_session_8765=" + other.id, other.csrf}).allowed);
}

BOOST_FIXTURE_TEST_CASE(an_unknown_or_expired_cookie_asks_for_a_new_link, fixture) {
  auto a = change({"", "cdui_session_8765=" + std::string(64, 'f'), signed_in.csrf});
  BOOST_TEST(!a.allowed);
  BOOST_TEST(a.refusal == expired_refusal);
  auto later = check_access({"", cookie(), signed_in.csrf}, request_kind::change, rules,
                            now + browser_session_lifetime);
  BOOST_TEST(!later.allowed);
  BOOST_TEST(later.refusal == expired_refusal);
}

BOOST_FIXTURE_TEST_CASE(another_servers_cookie_is_not_this_ones, fixture) {
  // Cookies are per host, not per port: a second server on the machine has its own cookie name.
  auto a = change({"", "cdui_session_9000=" + signed_in.id, signed_in.csrf});
  BOOST_TEST(!a.allowed);
  BOOST_TEST(a.refusal == sign_in_refusal);
}

BOOST_FIXTURE_TEST_CASE(when_reads_need_the_token_the_cookie_reads_without_csrf, fixture) {
  rules.reads_need_token = true;
  BOOST_TEST(read({"", cookie(), ""}).allowed);
  BOOST_TEST(read({"", "", ""}).refusal == token_refusal);
  BOOST_TEST(read({"", "", no_csrf}).refusal == sign_in_refusal);
}

BOOST_FIXTURE_TEST_CASE(without_sessions_only_the_token_counts, fixture) {
  // An embedding service that mounts the API without the dashboard.
  rules.sessions = nullptr;
  auto a = change({"", cookie(), signed_in.csrf});
  BOOST_TEST(!a.allowed);
  BOOST_TEST(a.refusal == token_refusal);
}

BOOST_AUTO_TEST_CASE(a_host_is_named_by_its_name_whatever_the_port_and_case) {
  auto names = loopback_host_names();
  BOOST_TEST(host_named("127.0.0.1:8765", names));
  BOOST_TEST(host_named("LOCALHOST", names));
  BOOST_TEST(host_named("[::1]:8765", names));
  BOOST_TEST(host_named("", names));  // not sent: a client that is not a browser
  BOOST_TEST(!host_named("attacker.example:8765", names));
  BOOST_TEST(!host_named("localhost.attacker.example", names));
  BOOST_TEST(!host_named("127.0.0.1.nip.io:8765", names));
  BOOST_TEST(!host_named("[::1", names));
  BOOST_TEST(!host_named(":8765", names));
  // The address the server listens on counts too, IPv6 written as Host writes it.
  BOOST_TEST(host_named("127.0.0.2:80", loopback_host_names("127.0.0.2")));
  BOOST_TEST(!host_named("127.0.0.2:80", names));
  BOOST_TEST(loopback_host_names("::1").size() == 3u);
  BOOST_TEST(origin_named("http://localhost:8765", names));
  BOOST_TEST(origin_named("https://127.0.0.1", names));
  BOOST_TEST(!origin_named("null", names));
  BOOST_TEST(!origin_named("file://", names));
  BOOST_TEST(!origin_named("http://attacker.example:8765", names));
  BOOST_TEST(!origin_named("http://localhost:8765/path", names));
}

BOOST_FIXTURE_TEST_CASE(without_the_token_a_request_must_name_the_server_as_it_listens, fixture) {
  rules.host_names = loopback_host_names();
  // DNS rebinding: a page whose own name now points at 127.0.0.1.
  auto rebound = read({"", "", "", "attacker.example:8765"});
  BOOST_TEST(!rebound.allowed);
  BOOST_TEST(rebound.refusal.find("Host: 'attacker.example:8765'") != std::string::npos, rebound.refusal);
  BOOST_TEST(read({"", "", "", "localhost:8765"}).allowed);
  // The signed-in cookie from a page of another site is no sign-in.
  auto foreign = change({"", cookie(), signed_in.csrf, "127.0.0.1:8765", "http://attacker.example"});
  BOOST_TEST(!foreign.allowed);
  BOOST_TEST(foreign.refusal.find("Origin: 'http://attacker.example'") != std::string::npos, foreign.refusal);
  BOOST_TEST(change({"", cookie(), signed_in.csrf, "127.0.0.1:8765", "http://127.0.0.1:8765"}).allowed);
  // The token is enough whatever the names; beyond loopback (no names) any name is.
  BOOST_TEST(change({token, "", "", "gpu-box.lab:9000", "http://gpu-box.lab:9000"}).allowed);
  rules.host_names.clear();
  BOOST_TEST(read({"", "", "", "gpu-box.lab:8765"}).allowed);
}

BOOST_AUTO_TEST_CASE(cookies_are_found_by_their_exact_name) {
  BOOST_TEST(cookie_value("a=1; b=2", "b") == "2");
  BOOST_TEST(cookie_value("a=1;b=2", "a") == "1");
  BOOST_TEST(cookie_value("  a = 1 ;", "a") == "1");
  BOOST_TEST(cookie_value("xa=1; ab=2", "a").empty());
  BOOST_TEST(cookie_value("a", "a").empty());
  BOOST_TEST(cookie_value("", "a").empty());
  BOOST_TEST(cookie_value("a=1=2", "a") == "1=2");
}

BOOST_AUTO_TEST_SUITE_END()
