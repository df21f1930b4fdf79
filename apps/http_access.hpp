#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "apps/browser_sessions.hpp"

namespace cdui::apps {

/// The header the dashboard's page sends its anti-CSRF value in, with every request.
inline constexpr const char* csrf_header = "X-CodefyUI-CSRF";
/// What the page sends in csrf_header before it has signed in: no session's value is ever this.
inline constexpr const char* no_csrf = "none";

/// The refusals, word for word as docs/http-api.md quotes them.
inline constexpr const char* token_refusal =
  "this request needs the session token in the X-CodefyUI-Token header (the server's token file is "
  "in $CODEFYUI_HOME)";
inline constexpr const char* sign_in_refusal =
  "the dashboard is read-only until this browser signs in: run `cdui ui` on the server's machine "
  "and open the one-time link it prints";
inline constexpr const char* expired_refusal =
  "this browser's sign-in has expired or the server has restarted since: run `cdui ui` on the "
  "server's machine and open the new link it prints";
inline constexpr const char* csrf_refusal =
  "this request carries the dashboard's cookie but not its X-CodefyUI-CSRF header: actions are "
  "taken from the dashboard's own page only";

/// What a request proves itself with: five of its headers.
struct request_credentials {
  std::string token;  // X-CodefyUI-Token
  std::string cookie; // Cookie, whole
  std::string csrf;   // X-CodefyUI-CSRF; empty when it is not sent
  std::string host;   // Host ("name" or "name:port"); empty when it is not sent
  std::string origin; // Origin ("http://name:port", or "null"); empty when it is not sent
};

/// Whether a request reads or changes something (POST, PUT, DELETE).
enum class request_kind { read, change };

/// What the server accepts (docs/http-api.md#the-session-token, docs/dashboard.md#signing-in).
struct access_rules {
  std::string token;
  bool reads_need_token = false;
  /// The dashboard's session cookie; empty, or no `sessions`: only the token is accepted.
  std::string cookie_name;
  const browser_sessions* sessions = nullptr;
  /// The names a request without the token must reach the server by, in its Host header and its
  /// Origin when it sends one ("localhost", "127.0.0.1", "[::1]"): a page that rebinds its own
  /// name to 127.0.0.1 is then still refused what a loopback client may read. Empty: any name (a
  /// server beyond loopback, where reads need the token or a sign-in anyway).
  std::vector<std::string> host_names;
};


/// The decision: allowed, or the 403's sentence.
struct access_decision {
  bool allowed = false;
  std::string refusal;
};

/// Decides a request: the token in its header is always enough. Without it the request must name
/// the server by one of `host_names` (Host, and Origin when sent); then a read is allowed when
/// reads need no token, or with a signed-in browser's cookie; a change needs the cookie together
/// with its session's anti-CSRF value in X-CodefyUI-CSRF (a page of another site can make the
/// browser send the cookie, never the header). The refusal names what is missing: the token for an
/// API client, the sign-in for the dashboard's page, a new link for an expired cookie.
[[nodiscard]] access_decision check_access(const request_credentials& credentials, request_kind kind,
                                  const access_rules& rules, browser_sessions::clock::time_point now);

/// Whether a Host header's name ("localhost:8765", "[::1]:80", "LOCALHOST") is one of `names`,
/// ASCII case aside; the port is not compared. An empty header (not sent) is.
[[nodiscard]] bool host_named(std::string_view host, const std::vector<std::string>& names);

/// Whether an Origin header ("http://localhost:8765") names a host of `names`, over http or https.
/// "null" (a sandboxed page, a file) and anything else does not.
[[nodiscard]] bool origin_named(std::string_view origin, const std::vector<std::string>& names);

/// The value of cookie `name` in a Cookie header ("a=1; b=2"); empty when it is not there.
[[nodiscard]] std::string cookie_value(std::string_view cookie_header, std::string_view name);

} // namespace cdui::apps
