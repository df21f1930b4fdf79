// The HTTP API against clients that send what no well-behaved client sends: bytes that are not
// UTF-8, bodies of any size and Content-Type, requests without a length, headers trickled a byte at
// a time, more long-polls than the server has threads. Through a real `cdui start` on 127.0.0.1;
// raw sockets where an HTTP client would not send such a request.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "testkit/raw_connection.hpp"
#include "testkit/server_process.hpp"
#include "testkit/graphs.hpp"

using namespace std::chrono_literals;
using cdui::test::endless_run;
using cdui::test::short_run;
using cdui::test::raw_connection;
using cdui::test::raw_reply;
using cdui::test::server_process;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;

namespace {

using connections = std::vector<std::unique_ptr<raw_connection>>;

/// Waits until one of `open` (null ones are done with) has bytes or its end; false at `end`.
bool any_readable(const connections& open, clock_type::time_point end) {
  std::vector<pollfd> fds;
  for (const auto& c : open) {
    if (c && c->readable(0ms))
      return true;
    if (c)
      fds.push_back({c->fd(), POLLIN, 0});
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - clock_type::now());
  return !fds.empty() && left.count() > 0
         && ::poll(fds.data(), fds.size(), static_cast<int>(left.count())) > 0;
}

std::string request(const std::string& method, const std::string& target,
                    const std::string& headers = "", const std::string& body = "") {
  return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers
         + (body.empty() ? "" : "Content-Length: " + std::to_string(body.size()) + "\r\n") + "\r\n"
         + body;
}

/// Sends one request on a fresh connection and returns the answer.
std::optional<raw_reply> ask(int port, const std::string& bytes, const char* source = "127.0.0.1") {
  raw_connection c{port, source};
  c.send(bytes);
  return c.reply();
}

/// Whether the server process is still the one that started, answering /api/health.
bool still_serving(server_process& srv) {
  auto health = srv.client().Get("/api/health");
  return !srv.proc().wait_for(0ms) && health && health->status == 200;
}

} // namespace

BOOST_AUTO_TEST_SUITE(http_hardening_test)

BOOST_AUTO_TEST_CASE(a_path_or_query_that_is_not_utf8_gets_400_naming_it_and_the_server_lives_on) {
  cdui::test::temp_home home;
  server_process srv{home};
  auto token = "X-CodefyUI-Token: " + srv.auth().begin()->second + "\r\n";
  // GET /api/runs/%ff, without a token, used to end the server (the error reply could not be
  // written as JSON).
  for (auto [bytes, detail] :
       {std::pair{request("GET", "/api/runs/%ff"), "path segment 'run id' is not valid UTF-8"},
        std::pair{request("GET", "/api/runs/%ff/events?wait=1"), "path segment 'run id'"},
        std::pair{request("POST", "/api/runs/%c3%28/cancel", token), "path segment 'run id'"},
        std::pair{request("POST", "/api/workers/%ff/drain", token), "path segment 'worker name'"},
        std::pair{request("DELETE", "/api/sessions/%ed%a0%80", token), "path segment 'session id'"},
        std::pair{request("GET", "/api/%ff"), "the path is not valid UTF-8"},
        std::pair{request("GET", "/api/runs?status=%ff"), "query parameter 'status' is not valid UTF-8"},
        std::pair{request("GET", "/api/runs?limit=1&%fe=2"), "a query parameter's name is not valid UTF-8"}}) {
    auto r = ask(srv.port(), bytes);
    BOOST_REQUIRE_MESSAGE(r, "no answer to " << bytes);
    BOOST_TEST(r->status == 400, bytes << r->body);
    BOOST_TEST(r->detail().is_string(), r->body);
    BOOST_TEST(r->detail().dump().find(detail) != std::string::npos, r->body);
    BOOST_TEST(r->headers.find("application/json") != std::string::npos);
  }
  BOOST_TEST(still_serving(srv));
  // What the server answers itself (no route) and what it could not read stays JSON as well.
  auto unknown = ask(srv.port(), request("GET", "/nothing/\xc3\xa9"));
  BOOST_REQUIRE(unknown);
  BOOST_TEST(unknown->status == 404);
  BOOST_TEST(unknown->detail() == "no such endpoint: GET /nothing/\xc3\xa9");
  for (auto garbage : {std::string{"GET /\xff\xfe HTTP/1.1\r\nHost: x\r\nbroken header\r\n\r\n"},
                       std::string{"\xff\xfe\r\n\r\n"}}) {
    auto r = ask(srv.port(), garbage);
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 400);
    BOOST_TEST(r->detail().is_string(), r->body);
  }
  BOOST_TEST(still_serving(srv));
}

BOOST_AUTO_TEST_CASE(a_body_is_read_as_json_whatever_its_content_type_and_size_under_the_limit) {
  cdui::test::temp_home home;
  server_process srv{home};
  // Over httplib's 8 KiB for form bodies (curl -d's Content-Type), which used to get 413.
  auto padded = short_run().dump() + std::string(20'000, ' ');
  for (auto type : {"application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"}) {
    auto res = srv.client().Post("/api/runs", srv.auth(), padded, type);
    BOOST_REQUIRE(res);
    BOOST_TEST(res->status == 200, type << ": " << res->body);
    if (res->status == 200)
      srv.wait_final(json::parse(res->body)["run_id"].get<std::string>());
  }
  // An invalid one gets its ordinary answer, not a 413.
  auto empty_graph = json{{"graph", json::object()}}.dump() + std::string(20'000, '\n');
  auto res = srv.client().Post("/api/runs", srv.auth(), empty_graph, "application/x-www-form-urlencoded");
  BOOST_REQUIRE(res);
  BOOST_TEST(res->status == 400, res->body);
  BOOST_TEST(res->body.find("the graph is empty") != std::string::npos, res->body);
}

// JSON nested 100,000 deep (200 KB of brackets) in a param or a sweep's graph ended the server
// with a stack overflow, and every run it executed with it (issue 33). Every body is parsed with a
// nesting limit: such a body gets a 400 saying so, and the server and its runs go on.
BOOST_AUTO_TEST_CASE(a_body_nested_past_the_limit_gets_400_and_the_server_and_its_runs_go_on) {
  cdui::test::temp_home home;
  server_process srv{home};
  auto running = srv.submit_ok(endless_run());
  srv.await_status(running, "running");
  constexpr int depth = 100'000;
  auto deep_array = std::string(depth, '[') + std::string(depth, ']');
  std::string deep_object;
  for (int i = 0; i < depth; ++i)
    deep_object += "{\"a\":";
  deep_object += "1" + std::string(depth, '}');
  // A body whose `"@deep"` string is replaced by `deep`.
  auto with = [](json body, const std::string& deep) {
    auto text = body.dump();
    return text.replace(text.find("\"@deep\""), 7, deep);
  };
  auto param = short_run();
  param["graph"]["nodes"][0]["params"]["deep"] = "@deep";
  json search{{"graph", "@deep"}, {"spec", {{"loop.epochs", {1, 2}}}}, {"objective", {{"metric", "val_loss"}}}};
  for (auto [path, body] : {std::pair{"/api/runs", with(param, deep_array)},
                            std::pair{"/api/runs", with(param, deep_object)},
                            std::pair{"/api/sweeps", with(search, deep_object)},
                            std::pair{"/api/studies", with(search, deep_array)},
                            std::pair{"/api/estimate", with(json{{"graph", "@deep"}}, deep_object)}}) {
    auto res = srv.client().Post(path, srv.auth(), body, "application/json");
    BOOST_REQUIRE_MESSAGE(res, path << ": no answer: " << httplib::to_string(res.error()));
    BOOST_TEST(res->status == 400, path << ": " << res->body.substr(0, 300));
    BOOST_TEST(res->body.find("nests objects and arrays deeper than 256 levels") != std::string::npos,
               path << ": " << res->body.substr(0, 300));
  }
  BOOST_TEST(still_serving(srv));
  BOOST_TEST(srv.get_json("/api/runs/" + running)["status"] == "running");
  // Nesting a graph needs is far inside the limit.
  auto fine = short_run();
  fine["graph"]["nodes"][0]["params"]["deep"] = "@deep";
  auto shallow = srv.client().Post("/api/runs", srv.auth(), with(fine, std::string(200, '[') + std::string(200, ']')),
                                   "application/json");
  BOOST_REQUIRE(shallow);
  BOOST_TEST(shallow->body.find("deeper than") == std::string::npos, shallow->body);
  srv.cancel(running);
}

BOOST_AUTO_TEST_CASE(a_body_over_the_limit_gets_413_naming_it_before_it_is_sent_and_after) {
  cdui::test::temp_home home;
  server_process srv{home, {{"CODEFYUI_HTTP_MAX_BODY_MB", "1"}}};
  // The headers alone: the answer comes without a byte of the body.
  raw_connection c{srv.port()};
  c.send("POST /api/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n");
  auto r = c.reply();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->status == 413);
  auto detail = r->detail().get<std::string>();
  BOOST_TEST(detail.find("the body is 2097152 bytes; this server takes at most 1 MiB") == 0u, detail);
  BOOST_TEST(detail.find("--max-body-mb") != std::string::npos, detail);
  BOOST_TEST(detail.find("CODEFYUI_HTTP_MAX_BODY_MB") != std::string::npos, detail);
  BOOST_TEST(c.closed_by_server(10s));  // the body was never read: the connection ends
  // A client that sends it all anyway reads the same answer (no reset lost it).
  auto res = srv.client().Post("/api/runs", srv.auth(), std::string(2 << 20, ' '), "application/json");
  BOOST_REQUIRE_MESSAGE(res, "no answer: " << httplib::to_string(res.error()));
  BOOST_TEST(res->status == 413);
  // Within the limit, a body is read.
  auto fits = srv.client().Post("/api/runs", srv.auth(), std::string(1 << 20, ' '), "application/json");
  BOOST_REQUIRE(fits);
  BOOST_TEST(fits->status == 400);
  BOOST_TEST(fits->body.find("not valid JSON") != std::string::npos, fits->body);
  BOOST_TEST(still_serving(srv));
}

BOOST_AUTO_TEST_CASE(a_request_without_a_length_has_no_body_and_is_answered_at_once) {
  cdui::test::temp_home home;
  server_process srv{home};
  auto token = "X-CodefyUI-Token: " + srv.auth().begin()->second + "\r\n";
  // Each used to wait for the client to close: httplib read the body until the end of the stream.
  auto put = ask(srv.port(), request("PUT", "/api/runs", token));
  BOOST_REQUIRE_MESSAGE(put, "a PUT without a body got no answer");
  BOOST_TEST(put->status == 404);
  BOOST_TEST(put->detail() == "no such endpoint: PUT /api/runs");
  // No route answers it, so it needs what a change needs: without the token, 403 at once.
  auto anonymous = ask(srv.port(), request("PUT", "/api/runs"));
  BOOST_REQUIRE_MESSAGE(anonymous, "a PUT without a body or a token got no answer");
  BOOST_TEST(anonymous->status == 403);
  auto cancel = ask(srv.port(), request("POST", "/api/runs/abcd1234/cancel", token));
  BOOST_REQUIRE(cancel);
  BOOST_TEST(cancel->status == 404);
  BOOST_TEST(cancel->detail() == "no run has the id 'abcd1234'");
  auto session = ask(srv.port(), request("DELETE", "/api/sessions/s1", token));
  BOOST_REQUIRE(session);
  BOOST_TEST(session->status == 200, session->body);
  // A chunked body has no length to check first: 411.
  auto chunked = ask(srv.port(), request("POST", "/api/runs", token + "Transfer-Encoding: chunked\r\n")
                                   + "2\r\n{}\r\n0\r\n\r\n");
  BOOST_REQUIRE(chunked);
  BOOST_TEST(chunked->status == 411);
  BOOST_TEST(chunked->detail().get<std::string>().find("Content-Length") != std::string::npos);
  BOOST_TEST(still_serving(srv));
}

BOOST_AUTO_TEST_CASE(clients_that_trickle_headers_are_capped_per_address_and_cut_at_the_deadline) {
  cdui::test::temp_home home;
  server_process srv{home, {{"CODEFYUI_HTTP_READ_DEADLINE_S", "4"}}};
  // More trickling connections than the server's 128 HTTP threads: without the cap of 32 per
  // address they would hold every thread until their deadline, and the API would not answer.
  constexpr std::size_t cap = 32;
  constexpr std::size_t opened = 130;
  connections slow;
  for (std::size_t i = 0; i < opened; ++i) {
    slow.push_back(std::make_unique<raw_connection>(srv.port()));
    slow.back()->send("GET /api/health HTTP/1.1\r\nX-Slow: ");
  }
  // Another address is answered while they hold their connections...
  auto other = ask(srv.port(), request("GET", "/api/health"), "127.0.0.2");
  BOOST_REQUIRE_MESSAGE(other, "GET /api/health from 127.0.0.2 got no answer");
  BOOST_TEST(other->status == 200);
  // ...which the deadline has not cut yet; those over the cap were answered 503 and closed.
  std::size_t refused = 0;
  auto end = clock_type::now() + 30s;
  while (refused < opened - cap && any_readable(slow, end))
    for (auto& c : slow) {
      if (!c || !c->readable(0ms))
        continue;
      auto r = c->reply(5s);
      BOOST_REQUIRE(r);
      BOOST_REQUIRE_MESSAGE(r->status == 503, "a trickling connection was answered " << r->status
                                                << " " << r->body << " before the other address");
      BOOST_TEST(r->detail().get<std::string>().find("CODEFYUI_HTTP_MAX_CONNECTIONS_PER_CLIENT")
                 != std::string::npos);
      BOOST_TEST(c->closed_by_server(5s));
      c.reset();
      ++refused;
    }
  BOOST_TEST(refused == opened - cap);
  // The ones within the cap are closed at their deadline however they trickle: a header byte
  // whenever 300 ms pass without the server closing.
  auto started = clock_type::now();
  for (auto& c : slow) {
    if (!c)
      continue;
    while (!c->closed_by_server(300ms) && clock_type::now() - started < 30s)
      c->send("x");
    BOOST_TEST(c->closed_by_server(0ms), "a trickling connection stayed open for 30 s");
  }
  // Their count is released (before the server closes each): 127.0.0.1 holds `cap` connections
  // again. (No other connection from 127.0.0.1 may be closing now: the server would count it
  // until it has read its end.)
  connections again;
  for (std::size_t i = 0; i < cap; ++i) {
    again.push_back(std::make_unique<raw_connection>(srv.port()));
    again.back()->send(request("GET", "/api/health"));
  }
  for (auto& c : again) {
    auto r = c->reply();
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200);
  }
  // And it still serves (asked from another address: the ones above still count for 127.0.0.1).
  auto after = ask(srv.port(), request("GET", "/api/health"), "127.0.0.2");
  BOOST_REQUIRE(after);
  BOOST_TEST(after->status == 200);
  BOOST_TEST(!srv.proc().wait_for(0ms));
}

BOOST_AUTO_TEST_CASE(long_polls_beyond_the_cap_answer_at_once_and_never_starve_other_requests) {
  cdui::test::temp_home home;
  server_process srv{home};
  // A run that waits in the queue behind an endless one adds no events: a poll on it waits.
  auto running = srv.submit_ok(endless_run());
  srv.await_status(running, "running");
  auto queued = srv.submit_ok(short_run());
  auto cursor = srv.get_json("/api/runs/" + queued + "/events")["cursor"].get<std::uint64_t>();
  auto poll = request("GET", "/api/runs/" + queued + "/events?wait=60&cursor=" + std::to_string(cursor),
                      "Connection: close\r\n");
  // More polls than the server's 128 HTTP threads, from five addresses (at most 32 each).
  constexpr std::size_t per_address = 30;
  constexpr std::size_t waiting_cap = 64;
  connections polls;
  for (int a = 2; a <= 6; ++a) {
    auto source = "127.0.0." + std::to_string(a);
    for (std::size_t i = 0; i < per_address; ++i) {
      polls.push_back(std::make_unique<raw_connection>(srv.port(), source.c_str()));
      polls.back()->send(poll);
    }
  }
  // All but 64 answer at once, with no events, as with wait=0.
  std::size_t answered = 0;
  auto end = clock_type::now() + 60s;
  while (answered < polls.size() - waiting_cap && any_readable(polls, end))
    for (auto& c : polls) {
      if (!c || !c->readable(0ms))
        continue;
      auto r = c->reply();
      BOOST_REQUIRE(r);
      BOOST_TEST(r->status == 200);
      BOOST_TEST(json::parse(r->body)["events"].empty());
      c.reset();
      ++answered;
    }
  BOOST_TEST(answered == polls.size() - waiting_cap);
  // An ordinary request is answered while 64 polls wait.
  auto health = ask(srv.port(), request("GET", "/api/health"), "127.0.0.9");
  BOOST_REQUIRE_MESSAGE(health, "GET /api/health got no answer while long-polls waited");
  BOOST_TEST(health->status == 200);
  std::size_t still_waiting = 0;
  for (auto& c : polls)
    still_waiting += c && !c->readable(0ms) ? 1 : 0;
  BOOST_TEST(still_waiting == waiting_cap);
  // The cancel is the event they wait for: each waiting poll answers with it.
  srv.cancel(queued);
  for (auto& c : polls) {
    if (!c)
      continue;
    auto r = c->reply(30s);
    BOOST_REQUIRE(r);
    BOOST_TEST(!json::parse(r->body)["events"].empty());
  }
  srv.cancel(running);
}

// A web page whose name its DNS rebinds to 127.0.0.1 reaches the server as a loopback client, with
// its own name in Host (issue 33): without the token, a request must name the server by loopback's
// names, and a page of another site (Origin) is no sign-in.
BOOST_AUTO_TEST_CASE(requests_without_the_token_must_name_the_server_by_a_loopback_name) {
  cdui::test::temp_home home;
  server_process srv{home};
  auto port = std::to_string(srv.port());
  auto answer = [&](const std::string& path, const std::string& headers) {
    auto r = ask(srv.port(), "GET " + path + " HTTP/1.1\r\n" + headers + "\r\n");
    BOOST_REQUIRE_MESSAGE(r, "no answer to GET " << path << " with " << headers);
    return *r;
  };
  auto id = srv.submit_ok(short_run());
  for (const std::string& host : {"127.0.0.1:" + port, "localhost:" + port, std::string{"LocalHost"}, "[::1]:" + port}) {
    BOOST_TEST(answer("/api/runs", "Host: " + host + "\r\n").status == 200, host);
  }
  BOOST_TEST(answer("/api/runs", "").status == 200);  // no Host at all: not a browser
  for (const std::string& path : {std::string{"/api/runs"}, "/api/runs/" + id, "/api/runs/" + id + "/events",
                                  std::string{"/api/status"}, std::string{"/metrics"}}) {
    auto rebound = answer(path, "Host: attacker.example:" + port + "\r\n");
    BOOST_TEST(rebound.status == 403, path << ": " << rebound.body);
    BOOST_TEST(rebound.detail().get<std::string>().find("Host: 'attacker.example:" + port + "'") != std::string::npos,
               rebound.body);
    BOOST_TEST(rebound.body.find("moons") == std::string::npos);
  }
  // A page of another site, even under a loopback name, is refused; the server's own page is not.
  auto foreign = answer("/api/runs", "Host: 127.0.0.1:" + port + "\r\nOrigin: http://attacker.example\r\n");
  BOOST_TEST(foreign.status == 403, foreign.body);
  BOOST_TEST(foreign.detail().get<std::string>().find("Origin: 'http://attacker.example'") != std::string::npos,
             foreign.body);
  BOOST_TEST(answer("/api/runs", "Host: 127.0.0.1:" + port + "\r\nOrigin: null\r\n").status == 403);
  BOOST_TEST(answer("/api/runs", "Host: 127.0.0.1:" + port + "\r\nOrigin: http://127.0.0.1:" + port + "\r\n").status == 200);
  // The token is enough whatever the names (an SSH tunnel, a proxy).
  auto token = "X-CodefyUI-Token: " + srv.auth().begin()->second + "\r\n";
  BOOST_TEST(answer("/api/runs", "Host: gpu-box.lab:9000\r\nOrigin: http://gpu-box.lab:9000\r\n" + token).status == 200);
  auto cancel = ask(srv.port(), "POST /api/runs/" + id + "/cancel HTTP/1.1\r\nHost: attacker.example\r\n"
                                "Content-Length: 0\r\n\r\n");
  BOOST_REQUIRE(cancel);
  BOOST_TEST(cancel->status == 403);
  srv.wait_final(id);
}

BOOST_AUTO_TEST_CASE(reads_need_the_token_when_asked_and_the_cli_sends_it) {
  cdui::test::temp_home home;
  std::map<std::string, std::string> env{{"CODEFYUI_HOME", home.path().string()},
                                         {"CODEFYUI_SIM_DEVICES", "1x1GiB"},
                                         {"CODEFYUI_HTTP_READ_TOKEN", "on"}};
  auto cli = [&](std::vector<std::string> args) { return cdui::test::run_cdui(std::move(args), env); };
  // In the background, with the flag: the start's readiness probe reads /api/status with the token.
  cdui::test::background_server_guard guard{home.path()};
  auto [started, out, err] = cli({"start", "--port", "0", "--max-body-mb", "1"});
  BOOST_REQUIRE_MESSAGE(started == 0, err);
  auto files = cdui::test::read_server_files(home.path());
  BOOST_REQUIRE(files.has_value());
  auto port = files->port;
  auto token = files->token;
  httplib::Client client{"127.0.0.1", port};
  for (auto path : {"/api/runs", "/api/health", "/api/status", "/api/workers", "/metrics", "/api/runs/abc"}) {
    auto anonymous = client.Get(path);
    BOOST_REQUIRE(anonymous);
    BOOST_TEST(anonymous->status == 403, path);
    auto with_token = client.Get(path, {{"X-CodefyUI-Token", token}});
    BOOST_REQUIRE(with_token);
    BOOST_TEST(with_token->status == (std::string{path} == "/api/runs/abc" ? 404 : 200), path);
  }
  auto [status, out2, err2] = cli({"status"});
  BOOST_TEST(status == 0, out2 << err2);
  auto [runs, out3, err3] = cli({"runs"});
  BOOST_TEST(runs == 0, out3 << err3);
  auto big = client.Post("/api/runs", {{"X-CodefyUI-Token", token}}, std::string((1 << 20) + 1, ' '),
                         "application/json");
  BOOST_REQUIRE(big);
  BOOST_TEST(big->status == 413);
  BOOST_TEST(big->body.find("at most 1 MiB") != std::string::npos, big->body);
  auto [stopped, out4, err4] = cli({"stop"});
  BOOST_TEST(stopped == 0, err4);

  // A setting the server cannot read stops the start: exit 2, naming it.
  for (auto [var, value] : {std::pair{"CODEFYUI_HTTP_READ_TOKEN", "yes"},
                            std::pair{"CODEFYUI_HTTP_MAX_BODY_MB", "lots"},
                            std::pair{"CODEFYUI_HTTP_READ_DEADLINE_S", "0"}}) {
    auto bad = env;
    bad[var] = value;
    cdui::test::process p{{CDUI_BINARY, "start", "--foreground", "--port", "0"}, bad};
    auto code = p.wait_for(60s);
    BOOST_REQUIRE(code.has_value());
    BOOST_TEST(*code == 2, var);
    BOOST_TEST(p.err().find(var) != std::string::npos, p.err());
  }
}

BOOST_AUTO_TEST_SUITE_END()
