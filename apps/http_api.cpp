// The HTTP API's assembly (docs/http-api.md): one route table, which each resource's routes join
// (http_resources.hpp), a filter before routing that refuses what a request may not reach, and
// the JSON answers of the errors cpp-httplib answers itself.
#include "apps/http_api.hpp"

#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "apps/dashboard.hpp"
#include "apps/http_guard.hpp"
#include "apps/http_resources.hpp"
#include "messages/text.hpp"

namespace cdui::apps {

namespace {

/// The 400 for the first string of the request a route would read that is not UTF-8 ("path
/// segment 'run id' is not valid UTF-8: ..."); empty when every one is. Checked here, at the edge,
/// so that no handler carries such bytes into a message, a log or the store.
std::string non_utf8_refusal(const httplib::Request& req) {
  static const std::map<std::string_view, const char*> segment_names{
    {"runs", "run id"}, {"workers", "worker name"}, {"sessions", "session id"}, {"sweeps", "sweep id"},
    {"studies", "study id"}};
  if (!text::is_utf8(req.path)) {
    // /api/<collection>/<name>/...: a bad <name> is named, anything else is "the path".
    std::vector<std::string_view> segments;
    for (std::string_view rest = req.path; !rest.empty();) {
      auto slash = rest.find('/');
      segments.push_back(rest.substr(0, slash));
      rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    }
    auto name = segments.size() > 3 && segments[1] == "api" ? segment_names.find(segments[2])
                                                            : segment_names.end();
    if (name != segment_names.end() && !text::is_utf8(segments[3]))
      return std::string{"path segment '"} + name->second + "' is not valid UTF-8: "
             + text::quoted(segments[3]);
    return "the path is not valid UTF-8: " + text::quoted(req.path);
  }
  for (const auto& [key, value] : req.params) {
    if (!text::is_utf8(key))
      return "a query parameter's name is not valid UTF-8: " + text::quoted(key);
    if (!text::is_utf8(value))
      return "query parameter '" + key + "' is not valid UTF-8: " + text::quoted(value);
  }
  return {};
}

/// Who may call what, with what the rules point to: the routes, the rules, and the browser
/// sessions, kept alive together for as long as the server's handlers live.
struct access_gate {
  route_table routes;
  access_rules rules;
  std::shared_ptr<browser_sessions> sessions;
  /// Whether the server ends a connection whose request body was left unread (http_guard does, as
  /// `cdui start` serves): then a refusal may come before the body is read. A plain
  /// httplib::Server would read the unread body as the next request on the connection.
  bool refuses_before_body = false;
};

/// The decision on `req` by the access `access` needs.
access_decision decide_on(const access_gate& gate, route_access access, const httplib::Request& req) {
  return decide(access, credentials_of(req), gate.rules, browser_sessions::clock::now());
}

/// Whether `req`'s access is decided once its body is read, not before: on a server that would
/// not end the connection, for a request that announces a body (a Content-Length above 0, or a
/// Transfer-Encoding). The filter lets it through; its route's handler or the 404's decides.
bool decided_after_body(const access_gate& gate, const httplib::Request& req) {
  return !gate.refuses_before_body
         && (req.has_header("Transfer-Encoding") || req.get_header_value<std::uint64_t>("Content-Length") > 0);
}

/// Before routing, and before a body is read: the request's strings, then the access its route
/// declares. A refusal is answered here, so no handler runs for a request it may not reach; on a
/// server that would not end the connection, a request with a body is refused after its body is
/// read instead (by the route's handler, serve(), or for no route, the 404's handler).
httplib::Server::HandlerResponse filter(const access_gate& gate, const httplib::Request& req,
                                        httplib::Response& res) {
  if (auto refusal = non_utf8_refusal(req); !refusal.empty()) {
    refuse(res, 400, refusal);
    return httplib::Server::HandlerResponse::Handled;
  }
  if (decided_after_body(gate, req))
    return httplib::Server::HandlerResponse::Unhandled;
  auto decision = decide_on(gate, access_needed(gate.routes, req.method, req.path), req);
  if (decision.allowed)
    return httplib::Server::HandlerResponse::Unhandled;
  refuse(res, 403, decision.refusal);
  return httplib::Server::HandlerResponse::Handled;
}

/// Registers each route of `gate`'s table with cpp-httplib, in the table's order; on a server
/// that reads every body, each handler first decides the access its route declares.
void serve(httplib::Server& http, const std::shared_ptr<const access_gate>& gate) {
  for (const auto& r : gate->routes.routes()) {
    const auto& method = r.declared.method;
    const auto& pattern = r.declared.pattern;
    auto handler = r.handler;
    if (!gate->refuses_before_body)
      handler = [gate, access = r.declared.access, inner = r.handler](const httplib::Request& req,
                                                                      httplib::Response& res) {
        if (!decided_after_body(*gate, req)) {
          inner(req, res);  // the filter allowed it
          return;
        }
        if (auto decision = decide_on(*gate, access, req); !decision.allowed)
          refuse(res, 403, decision.refusal);
        else
          inner(req, res);
      };
    if (method == "GET")
      http.Get(pattern, handler);
    else if (method == "POST")
      http.Post(pattern, handler);
    else if (method == "PUT")
      http.Put(pattern, handler);
    else if (method == "DELETE")
      http.Delete(pattern, handler);
  }
}

/// The status of a handler's exception: an api_failure's kind's (the store's: the disk is full,
/// 503), else 500.
int status_of(std::exception_ptr ep) {
  try {
    std::rethrow_exception(ep);
  } catch (const api_failure& e) {
    return http_status(e.kind());
  } catch (...) {
    return 500;
  }
}

/// The JSON answers of what cpp-httplib answers itself: no route, an unreadable request, an
/// exception out of a handler.
void answer_errors_in_json(httplib::Server& http, std::shared_ptr<const access_gate> gate) {
  // Errors cpp-httplib answers itself (no route, an unreadable request) get a JSON detail too.
  // Neither handler may throw: httplib calls them where an exception ends the process.
  http.set_error_handler([gate](const httplib::Request& req, httplib::Response& res) noexcept {
    if (!res.body.empty())
      return;
    try {
      auto request = text::to_utf8(req.method + " " + req.path);
      auto decision = res.status == 404 && decided_after_body(*gate, req)
                        ? decide_on(*gate, access_needed(gate->routes, req.method, req.path), req)
                        : access_decision{true, {}};
      if (!decision.allowed)  // a body the filter let through to be read: no 404 before access
        refuse(res, 403, decision.refusal);
      else if (res.status == 404)
        refuse(res, 404, "no such endpoint: " + request);
      else
        refuse(res, res.status, request + ": the request could not be read (HTTP "
                                  + std::to_string(res.status) + ": a malformed request line, "
                                  "header or body, or one not sent in time)");
    } catch (...) {
      res.set_content(R"({"detail":"the request could not be answered"})", "application/json");
    }
  });
  http.set_exception_handler(
    [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) noexcept {
      try {
        auto detail = text::to_utf8(req.method + " " + req.path + " failed: "
                                    + text::what_of(ep, "unknown error"));
        spdlog::error("HTTP {}", detail);
        refuse(res, status_of(ep), detail);
      } catch (...) {
        res.status = 500;
        res.set_content(R"({"detail":"the server failed to answer this request"})",
                        "application/json");
      }
    });
}

} // namespace

std::vector<route_declaration> mount_http_api(httplib::Server& http, cdui::server& runtime,
                                              http_api_options options) {
  auto gate = std::make_shared<access_gate>();
  gate->rules = {options.token, options.reads_need_token, options.cookie_name, options.sessions.get(),
                 options.host_names};
  gate->sessions = options.sessions;
  gate->refuses_before_body = dynamic_cast<http_guard*>(&http) != nullptr;
  auto& routes = gate->routes;
  if (options.sessions)
    add_dashboard_routes(routes, options.sessions, gate->rules);
  add_run_routes(routes, runtime, options.max_waiting_polls);
  add_search_routes(routes, runtime);
  add_estimate_routes(routes);
  add_worker_routes(routes, runtime);
  add_server_routes(routes, runtime);
  http.set_pre_routing_handler([gate](const httplib::Request& req, httplib::Response& res) {
    return filter(*gate, req, res);
  });
  serve(http, gate);
  answer_errors_in_json(http, gate);
  return routes.declarations();
}

} // namespace cdui::apps
