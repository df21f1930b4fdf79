#pragma once

#include <cstddef>
#include <string>

namespace httplib {
class Server;
}

namespace cdui {
class server;
}

namespace cdui::apps {

/// The header that carries the session token.
inline constexpr const char* token_header = "X-CodefyUI-Token";

/// How the API answers (docs/http-api.md#the-session-token, #limits).
struct http_api_options {
  /// The session token that requests which change something carry.
  std::string token;
  /// Whether reads (GET) need the token too: when the server listens beyond loopback.
  bool reads_need_token = false;
  /// Long-polls that may wait at once; one more answers at once, as with wait=0. Below the HTTP
  /// thread count, so that waiting long-polls never hold every thread.
  std::size_t max_waiting_polls = 64;
};

/// Registers cdui's HTTP API (docs/http-api.md) on `http`, answering from `runtime`. Requests that
/// change something (POST, DELETE) need the token in the X-CodefyUI-Token header, reads too with
/// `reads_need_token`. Errors are JSON {"detail": "..."} with a 4xx or 5xx status; a path segment or
/// query parameter that is not UTF-8 gets 400 naming it. `runtime` must outlive the HTTP server's use.
void mount_http_api(httplib::Server& http, cdui::server& runtime, http_api_options options);

} // namespace cdui::apps
