#pragma once
// What the HTTP API's and the dashboard's routes share at the edge: answers in JSON, errors as
// {"detail": "..."}, and the headers a request proves itself with.

#include <optional>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/http_access.hpp"
#include "apps/http_api.hpp"
#include "messages/json_text.hpp"

namespace cdui::apps {

inline void reply(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(json_text(body), "application/json");
}

inline void refuse(httplib::Response& res, int status, const std::string& detail) {
  reply(res, status, {{"detail", detail}});
}

/// The request's body as JSON (messages/json_text.hpp's parse_json_text, which refuses deep
/// nesting); nullopt once a 400 saying why is answered.
inline std::optional<nlohmann::json> json_body(const httplib::Request& req, httplib::Response& res) {
  auto parsed = parse_json_text(req.body);
  if (!parsed.ok()) {
    refuse(res, 400, "the body is not valid JSON: " + parsed.error);
    return std::nullopt;
  }
  return std::move(parsed.value);
}

/// The token, cookie, anti-CSRF, Host and Origin headers of `req`.
inline request_credentials credentials_of(const httplib::Request& req) {
  return {req.get_header_value(token_header), req.get_header_value("Cookie"),
          req.get_header_value(csrf_header), req.get_header_value("Host"),
          req.get_header_value("Origin")};
}

} // namespace cdui::apps
