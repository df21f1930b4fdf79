#include <boost/test/unit_test.hpp>

#include "apps/http_guard.hpp"

using cdui::apps::client_connections;
using cdui::apps::http_limits;
using cdui::apps::read_deadline;
using cdui::apps::refuse_body;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(http_guard_test)

BOOST_AUTO_TEST_CASE(an_address_opens_up_to_its_cap_and_another_address_is_not_affected) {
  client_connections connections{2};
  BOOST_TEST(connections.try_open("127.0.0.1"));
  BOOST_TEST(connections.try_open("127.0.0.1"));
  BOOST_TEST(!connections.try_open("127.0.0.1"));
  BOOST_TEST(connections.open("127.0.0.1") == 2u);  // the refused one was not counted
  BOOST_TEST(connections.try_open("127.0.0.2"));
  connections.close("127.0.0.1");
  BOOST_TEST(connections.try_open("127.0.0.1"));
  connections.close("127.0.0.1");
  connections.close("127.0.0.1");
  connections.close("127.0.0.2");
  BOOST_TEST(connections.open("127.0.0.1") == 0u);
  BOOST_TEST(connections.open("127.0.0.2") == 0u);
}

BOOST_AUTO_TEST_CASE(a_request_gets_its_budget_from_its_first_byte_each_read_at_most_its_own_timeout) {
  read_deadline deadline{10s, 5s};
  read_deadline::clock::time_point t0{};
  deadline.start(t0);
  BOOST_TEST((deadline.next_wait(t0) == 5s));          // one read's timeout
  BOOST_TEST((deadline.next_wait(t0 + 7s) == 3s));     // what is left of the budget
  BOOST_TEST(!deadline.passed(t0 + 9s));
  // A client that trickles a byte before each read's timeout cannot extend the budget.
  BOOST_TEST(deadline.passed(t0 + 10s));
  BOOST_TEST((deadline.next_wait(t0 + 12s) == 0s));
  deadline.start(t0 + 20s);  // the next request on the connection
  BOOST_TEST((deadline.next_wait(t0 + 21s) == 5s));
}

BOOST_AUTO_TEST_CASE(a_body_with_a_length_up_to_the_limit_or_none_at_all_is_read) {
  http_limits limits;
  limits.max_body_bytes = 1000;
  BOOST_TEST(refuse_body({}, limits).status == 0);
  BOOST_TEST(refuse_body({{"Content-Length", "0"}}, limits).status == 0);
  BOOST_TEST(refuse_body({{"content-length", "1000"}}, limits).status == 0);
}

BOOST_AUTO_TEST_CASE(a_body_over_the_limit_is_refused_with_413_naming_the_limit_and_the_setting) {
  http_limits limits;
  limits.max_body_bytes = 2 << 20;
  limits.max_body_setting = "cdui start --max-body-mb N";
  auto refusal = refuse_body({{"Content-Length", "52428800"}}, limits);
  BOOST_TEST(refusal.status == 413);
  BOOST_TEST(refusal.detail == "the body is 52428800 bytes; this server takes at most 2 MiB "
                               "(cdui start --max-body-mb N)");
}

BOOST_AUTO_TEST_CASE(chunked_bodies_get_411_and_unreadable_lengths_400) {
  http_limits limits;
  BOOST_TEST(refuse_body({{"Transfer-Encoding", "chunked"}}, limits).status == 411);
  BOOST_TEST(refuse_body({{"Transfer-Encoding", "gzip, chunked"}, {"Content-Length", "5"}}, limits)
               .status == 411);
  for (auto bad : {"", "-1", "12abc", " 12", "0x10", "99999999999999999999"})
    BOOST_TEST(refuse_body({{"Content-Length", bad}}, limits).status == 400, "Content-Length " << bad);
  BOOST_TEST(refuse_body({{"Content-Length", "1"}, {"Content-Length", "1"}}, limits).status == 400);
  auto refusal = refuse_body({{"Content-Length", "\xff"}}, limits);
  BOOST_TEST(refusal.detail == "the Content-Length '\xef\xbf\xbd' is not a number of bytes");
}

BOOST_AUTO_TEST_SUITE_END()
