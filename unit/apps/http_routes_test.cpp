// The HTTP edge's route table: which route answers a request, and the access each declares. Then
// every route that mount_http_api declares, walked on an embedded server over loopback: no write
// route answers a request without the token (or a signed-in browser's cookie with its anti-CSRF
// header), no read route one that names the server by a foreign name, and each one is reached with
// the token.
#include <boost/test/unit_test.hpp>

#include <regex>
#include <set>
#include <thread>

#include <httplib.h>

#include "apps/browser_sessions.hpp"
#include "apps/http_access.hpp"
#include "apps/http_api.hpp"
#include "apps/http_edge.hpp"
#include "apps/http_guard.hpp"
#include "apps/http_routes.hpp"
#include "testkit/embedded.hpp"
#include "testkit/home.hpp"
#include "testkit/raw_connection.hpp"

using namespace cdui::apps;

BOOST_AUTO_TEST_SUITE(http_routes_test)

namespace {

httplib::Server::Handler answers(int status) {
  return [status](const httplib::Request&, httplib::Response& res) { res.status = status; };
}

/// A path that `pattern` matches: each group as its first alternative or "x", each `.+` as "x".
std::string example_path(const std::string& pattern) {
  auto path = std::regex_replace(pattern, std::regex{R"(\(\[\^/\]\+\))"}, "x");
  path = std::regex_replace(path, std::regex{R"(\(([^|()]+)(\|[^()]*)?\))"}, "$1");
  path = std::regex_replace(path, std::regex{R"(\\\.)"}, ".");
  return std::regex_replace(path, std::regex{R"(\.\+)"}, "x");
}

/// An embedded server with its HTTP API and dashboard on 127.0.0.1, at a free port: served by
/// http_guard, as `cdui start` serves it, or by a plain httplib::Server, as a service may.
struct served_api {
  cdui::test::temp_home home;
  cdui::server runtime{cdui::test::server_config(home.path(), "1GiB")};
  std::shared_ptr<browser_sessions> sessions = std::make_shared<browser_sessions>();
  std::unique_ptr<httplib::Server> server;
  std::vector<route_declaration> routes;
  std::thread listener;
  int port = 0;
  const std::string token = std::string(64, 't');

  explicit served_api(bool guarded = true)
    : server(guarded ? std::make_unique<http_guard>(http_limits{}) : std::make_unique<httplib::Server>()) {
    http_api_options options;
    options.token = token;
    options.sessions = sessions;
    routes = mount_http_api(*server, runtime, options);
    port = server->bind_to_any_port("127.0.0.1");
    BOOST_REQUIRE(port > 0);
    listener = std::thread{[this] { server->listen_after_bind(); }};
    BOOST_REQUIRE(cdui::test::eventually([this] { return server->is_running(); }));
  }
  ~served_api() {
    server->stop();
    listener.join();
  }
  served_api(const served_api&) = delete;
  served_api& operator=(const served_api&) = delete;

  /// The status `method` on `path` gets with `headers` (and an empty JSON body for a change).
  int status(const std::string& method, const std::string& path, const httplib::Headers& headers) {
    httplib::Client client{"127.0.0.1", port};
    client.set_read_timeout(30, 0);
    auto r = method == "GET"    ? client.Get(path.c_str(), headers)
             : method == "POST" ? client.Post(path.c_str(), headers, "{}", "application/json")
             : method == "PUT"  ? client.Put(path.c_str(), headers, "{}", "application/json")
                                : client.Delete(path.c_str(), headers);
    BOOST_REQUIRE_MESSAGE(r, method << " " << path << ": no answer");
    return r->status;
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(the_first_route_whose_method_and_whole_path_match_answers_and_head_reads_as_get) {
  route_table table;
  table.get(R"(/api/runs/([^/]+))", route_access::read, answers(200));
  table.post(R"(/api/runs/([^/]+)/cancel)", answers(200));
  table.get("/", route_access::open, answers(200));
  table.add("POST", "/api/ui/links", route_access::token_only, answers(200));

  BOOST_TEST((table.find("GET", "/api/runs/abc")->declared.access == route_access::read));
  BOOST_TEST((table.find("HEAD", "/api/runs/abc")->declared.access == route_access::read));
  BOOST_TEST(table.find("GET", "/api/runs/abc/cancel") == nullptr);  // the whole path, not its start
  BOOST_TEST(table.find("POST", "/api/runs/abc") == nullptr);        // the method too
  BOOST_TEST((table.find("POST", "/api/runs/abc/cancel")->declared.access == route_access::change));
  BOOST_TEST((table.find("GET", "/")->declared.access == route_access::open));
  BOOST_TEST(table.find("GET", "/ui") == nullptr);
  // A path no route answers needs what its method asks: its 404 comes only to who may know it.
  BOOST_TEST((access_needed(table, "GET", "/api/nothing") == route_access::read));
  BOOST_TEST((access_needed(table, "DELETE", "/api/nothing") == route_access::change));
  BOOST_TEST((access_needed(table, "OPTIONS", "/") == route_access::change));
  BOOST_TEST((access_needed(table, "POST", "/api/ui/links") == route_access::token_only));
  // Patterns whose literal start is not all the path has: a quantified last character, an
  // alternative outside a group.
  route_table more;
  more.add("POST", "/api/links/?", route_access::token_only, answers(200));
  more.add("POST", "/api/a|/api/b", route_access::token_only, answers(200));
  BOOST_TEST((access_needed(more, "POST", "/api/links") == route_access::token_only));
  BOOST_TEST((access_needed(more, "POST", "/api/links/") == route_access::token_only));
  BOOST_TEST((access_needed(more, "POST", "/api/b") == route_access::token_only));
}

BOOST_AUTO_TEST_CASE(a_link_is_made_with_the_token_alone_and_open_routes_need_nothing) {
  browser_sessions sessions;
  auto now = browser_sessions::clock::now();
  auto signed_in = *sessions.redeem(sessions.new_code(now), now);
  access_rules rules{"secret", false, "cdui_session", &sessions, loopback_host_names()};
  request_credentials browser{"", "cdui_session=" + signed_in.id, signed_in.csrf, "localhost:1", ""};
  BOOST_TEST(decide(route_access::change, browser, rules, now).allowed);
  auto link = decide(route_access::token_only, browser, rules, now);
  BOOST_TEST(!link.allowed);
  BOOST_TEST(link.refusal == token_refusal);
  BOOST_TEST(decide(route_access::token_only, {"secret", "", "", "localhost", ""}, rules, now).allowed);
  BOOST_TEST(decide(route_access::open, {"", "", "", "evil.example", "http://evil.example"}, rules, now).allowed);
  BOOST_TEST(!decide(route_access::read, {"", "", "", "evil.example", ""}, rules, now).allowed);
}

BOOST_AUTO_TEST_CASE(each_kind_of_error_is_answered_with_its_status_and_its_sentence) {
  const std::pair<cdui::error_kind, int> statuses[] = {
    {cdui::error_kind::not_found, 404}, {cdui::error_kind::refused, 400}, {cdui::error_kind::conflict, 409},
    {cdui::error_kind::busy, 503},      {cdui::error_kind::store_failure, 503}, {cdui::error_kind::internal, 500}};
  for (const auto& [kind, status] : statuses) {
    httplib::Response res;
    refuse(res, cdui::api_error{kind, "the run queue did not answer within 30 s"});
    BOOST_TEST(res.status == status, cdui::to_string(kind));
    BOOST_TEST(res.body == R"({"detail":"the run queue did not answer within 30 s"})");
  }
}

BOOST_AUTO_TEST_CASE(every_declared_route_refuses_who_may_not_call_it_and_answers_the_token) {
  served_api api;
  BOOST_TEST_REQUIRE(api.routes.size() >= 30u);
  auto now = browser_sessions::clock::now();
  auto signed_in = *api.sessions->redeem(api.sessions->new_code(now), now);
  const httplib::Headers none;
  const httplib::Headers wrong_token{{token_header, std::string(64, 'w')}};
  const httplib::Headers cookie_only{{"Cookie", "cdui_session=" + signed_in.id}};
  const httplib::Headers foreign_host{{"Host", "rebound.example:80"}};
  const httplib::Headers with_token{{token_header, api.token}};
  // What may be opened with nothing: the dashboard's page, its files, its link and its sign-in state.
  const std::set<std::string> open_patterns{"/", R"(/ui/.+)", "/ui/login", "/api/ui/session"};
  std::set<std::string> writes;
  for (const auto& route : api.routes) {
    auto path = example_path(route.pattern);
    auto name = route.method + " " + route.pattern + " (as " + path + ")";
    BOOST_TEST_REQUIRE(std::regex_match(path, std::regex{route.pattern}), name);
    if (route.access == route_access::open) {
      BOOST_TEST((route.method == "GET" && open_patterns.count(route.pattern) == 1), name);
      continue;
    }
    if (route.method == "GET") {
      BOOST_TEST((route.access == route_access::read), name);
      BOOST_TEST(api.status("GET", path, foreign_host) == 403, name);
    } else {
      writes.insert(route.method + " " + route.pattern);
      BOOST_TEST((route.access == route_access::change || route.access == route_access::token_only), name);
      BOOST_TEST(api.status(route.method, path, none) == 403, name);
      BOOST_TEST(api.status(route.method, path, wrong_token) == 403, name);
      BOOST_TEST(api.status(route.method, path, cookie_only) == 403, name);  // no anti-CSRF header
    }
    BOOST_TEST(api.status(route.method, path, with_token) != 403, name);
  }
  // The walk saw every kind of change the API makes.
  for (const auto* write : {"POST /api/runs", "DELETE /api/runs/([^/]+)", "POST /api/sweeps", "POST /api/studies",
                            "POST /api/workers/enroll", "PUT /api/devices/([^/]+)/sharing", "POST /api/ui/links"})
    BOOST_TEST(writes.count(write) == 1, write);
}

BOOST_AUTO_TEST_CASE(a_refused_change_is_answered_before_its_body_is_sent) {
  served_api api;  // http_guard: it ends a connection whose body was left unread
  cdui::test::raw_connection c{api.port};
  // Headers that promise a megabyte, and not a byte of it: a server that read the body first
  // would wait for it (and time out with a 400), not answer 403 at once.
  BOOST_REQUIRE(c.send("POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       "Content-Length: 1000000\r\n\r\n"));
  auto refused = c.reply(std::chrono::seconds{30});
  BOOST_REQUIRE_MESSAGE(refused, "no answer within 30 s");
  BOOST_TEST(refused->status == 403);
  BOOST_TEST(refused->detail() == token_refusal);
}

BOOST_AUTO_TEST_CASE(on_a_plain_server_a_refused_body_is_read_so_the_next_request_is_answered_as_sent) {
  served_api api{false};  // a service's own httplib::Server, which keeps the connection open
  cdui::test::raw_connection c{api.port};
  // A refused POST whose body is requests, more than a read takes at once: none may be answered.
  std::string hidden;
  while (hidden.size() < 64 * 1024)
    hidden += "GET /api/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  BOOST_REQUIRE(c.send("POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
                       + std::to_string(hidden.size()) + "\r\n\r\n" + hidden));
  auto refused = c.reply(std::chrono::seconds{30});
  BOOST_REQUIRE(refused);
  BOOST_TEST(refused->status == 403);
  // The next request on the connection is answered, not the body read as one.
  BOOST_REQUIRE(c.send("GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  auto next = c.reply(std::chrono::seconds{30});
  BOOST_REQUIRE(next);
  BOOST_TEST(next->status == 200, next->body);
  BOOST_TEST(next->body.find("\"caches\"") != std::string::npos, "the body was answered instead: " << next->body);
  // An unknown path with a body needs the token too, after its body is read.
  cdui::test::raw_connection d{api.port};
  BOOST_REQUIRE(d.send("PUT /api/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}"));
  auto unknown = d.reply(std::chrono::seconds{30});
  BOOST_REQUIRE(unknown);
  BOOST_TEST(unknown->status == 403);
}

BOOST_AUTO_TEST_SUITE_END()
