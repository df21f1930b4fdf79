#pragma once
// What the HTTP API's and the dashboard's routes share at the edge: answers in JSON, errors as
// {"detail": "..."}, and the headers a request proves itself with.

#include <optional>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/http_access.hpp"
#include "apps/http_api.hpp"
#include "messages/api_error.hpp"
#include "messages/json_text.hpp"

namespace cdui::apps {

inline void reply(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(json_text(body), "application/json");
}

inline void refuse(httplib::Response& res, int status, const std::string& detail) {
  reply(res, status, {{"detail", detail}});
}

/// The HTTP status of each kind of failure, in one place: not_found 404, refused 400, conflict
/// 409, busy and store_failure 503 (try again: a part did not answer, the disk is full), internal
/// 500.
constexpr int http_status(error_kind kind) {
  switch (kind) {
  case error_kind::not_found:
    return 404;
  case error_kind::refused:
    return 400;
  case error_kind::conflict:
    return 409;
  case error_kind::busy:
  case error_kind::store_failure:
    return 503;
  case error_kind::internal:
    return 500;
  }
  return 500;
}

/// Answers `error` with its kind's status and its sentence.
inline void refuse(httplib::Response& res, const api_error& error) {
  refuse(res, http_status(error.kind), error.message);
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
