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
};

/// Before routing, and before a body is read: the request's strings, then the access its route
/// declares. A refusal is answered here, so no handler runs for a request it may not reach.
httplib::Server::HandlerResponse filter(const access_gate& gate, const httplib::Request& req,
                                        httplib::Response& res) {
  if (auto refusal = non_utf8_refusal(req); !refusal.empty()) {
    refuse(res, 400, refusal);
    return httplib::Server::HandlerResponse::Handled;
  }
  auto decision = decide(access_needed(gate.routes, req.method, req.path), credentials_of(req),
                         gate.rules, browser_sessions::clock::now());
  if (decision.allowed)
    return httplib::Server::HandlerResponse::Unhandled;
  refuse(res, 403, decision.refusal);
  return httplib::Server::HandlerResponse::Handled;
}

/// Registers each route of `routes` with cpp-httplib, in the table's order.
void serve(httplib::Server& http, const route_table& routes) {
  for (const auto& r : routes.routes()) {
    const auto& method = r.declared.method;
    const auto& pattern = r.declared.pattern;
    if (method == "GET")
      http.Get(pattern, r.handler);
    else if (method == "POST")
      http.Post(pattern, r.handler);
    else if (method == "PUT")
      http.Put(pattern, r.handler);
    else if (method == "DELETE")
      http.Delete(pattern, r.handler);
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
void answer_errors_in_json(httplib::Server& http) {
  // Errors cpp-httplib answers itself (no route, an unreadable request) get a JSON detail too.
  // Neither handler may throw: httplib calls them where an exception ends the process.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) noexcept {
    if (!res.body.empty())
      return;
    try {
      auto request = text::to_utf8(req.method + " " + req.path);
      if (res.status == 404)
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
  serve(http, routes);
  answer_errors_in_json(http);
  return routes.declarations();
}

} // namespace cdui::apps
