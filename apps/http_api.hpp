#pragma once

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

/// Registers cdui's HTTP API (docs/http-api.md) on `http`, answering from `runtime`. Requests that
/// change something (POST, DELETE) need `token` in the X-CodefyUI-Token header. Errors are JSON
/// {"detail": "..."} with a 4xx or 503 status. Both objects must outlive the HTTP server's use.
void mount_http_api(httplib::Server& http, cdui::server& runtime, std::string token);

} // namespace cdui::apps
