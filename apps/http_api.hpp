#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace httplib {
class Server;
}

namespace cdui {
class server;
}

namespace cdui::apps {

class browser_sessions;

/// The header that carries the session token.
inline constexpr const char* token_header = "X-CodefyUI-Token";

/// The names a server that listens on loopback is reached by ("localhost", "127.0.0.1", "[::1]"),
/// with `bind_host` (the address it listens on, written as a Host header writes it).
[[nodiscard]] std::vector<std::string> loopback_host_names(const std::string& bind_host = "127.0.0.1");

/// Who may call a route, declared with it (docs/http-api.md#the-session-token).
enum class route_access {
  /// Anyone: the dashboard's page and files (static), its one-time sign-in link, and whether this
  /// browser has signed in.
  open,
  /// A read: free from loopback unless reads need the token; else the token or a signed-in browser.
  read,
  /// A change: the token, or a signed-in browser's cookie with its anti-CSRF header.
  change,
  /// The token alone: making a sign-in link (a signed-in browser makes none).
  token_only,
};

[[nodiscard]] const char* to_string(route_access access);

/// A route as it is declared: method, path pattern (a regular expression the whole path matches,
/// as cpp-httplib's) and who may call it.
struct route_declaration {
  std::string method;
  std::string pattern;
  route_access access = route_access::change;
};

/// How the API answers (docs/http-api.md#the-session-token, #limits).
struct http_api_options {
  /// The session token that requests which change something carry.
  std::string token;
  /// Whether reads (GET) need the token too: when the server listens beyond loopback.
  bool reads_need_token = false;
  /// Long-polls that may wait at once; one more answers at once, as with wait=0. Below the HTTP
  /// thread count, so that waiting long-polls never hold every thread.
  std::size_t max_waiting_polls = 64;
  /// The dashboard's browser sign-ins (docs/dashboard.md). When set, the dashboard is served at `/`
  /// and a signed-in browser's cookie counts as the token does: for reads, and, with the page's
  /// anti-CSRF header, for changes. Unset (an embedding service's default): the token alone.
  std::shared_ptr<browser_sessions> sessions;
  /// The dashboard's cookie: one name per port, since a browser keeps cookies per host.
  std::string cookie_name = "cdui_session";
  /// The names a request without the token must reach the server by (access_rules::host_names):
  /// loopback's, for a server on 127.0.0.1; empty for one that listens beyond loopback.
  std::vector<std::string> host_names = loopback_host_names();
};

/// Registers cdui's HTTP API (docs/http-api.md) on `http`, answering from `runtime`, and the
/// dashboard with `sessions`, and returns the routes it declared. Each route's access is decided
/// from its declaration before routing and before its body is read: requests that change
/// something (POST, PUT, DELETE) need the token in the X-CodefyUI-Token header (or a signed-in
/// browser's cookie and anti-CSRF header), reads too with `reads_need_token`; a refusal is a 403
/// that says what is missing. Errors are JSON {"detail": "..."} with a 4xx or 5xx status; a path
/// segment or query parameter that is not UTF-8 gets 400 naming it. `runtime` must outlive the HTTP
/// server's use.
std::vector<route_declaration> mount_http_api(httplib::Server& http, cdui::server& runtime,
                                              http_api_options options);

} // namespace cdui::apps
