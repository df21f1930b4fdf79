#pragma once
// What the HTTP API's and the dashboard's routes share at the edge: answers in JSON, errors as
// {"detail": "..."}, and the headers a request proves itself with.

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

/// The token, cookie and anti-CSRF headers of `req`.
inline request_credentials credentials_of(const httplib::Request& req) {
  return {req.get_header_value(token_header), req.get_header_value("Cookie"),
          req.get_header_value(csrf_header)};
}

} // namespace cdui::apps
