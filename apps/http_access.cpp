#include "apps/http_access.hpp"

#include "messages/text.hpp"
#include "storage/credentials.hpp"

namespace cdui::apps {

std::string cookie_value(std::string_view cookie_header, std::string_view name) {
  while (!cookie_header.empty()) {
    auto semicolon = cookie_header.find(';');
    auto pair = text::trimmed(cookie_header.substr(0, semicolon));
    cookie_header = semicolon == std::string_view::npos ? std::string_view{}
                                                        : cookie_header.substr(semicolon + 1);
    auto equals = pair.find('=');
    if (equals != std::string_view::npos && text::trimmed(pair.substr(0, equals)) == name)
      return std::string{text::trimmed(pair.substr(equals + 1))};
  }
  return {};
}

access_decision check_access(const request_credentials& credentials, request_kind kind,
                    const access_rules& rules, browser_sessions::clock::time_point now) {
  if (!credentials.token.empty() && storage::same_secret(credentials.token, rules.token))
    return {true, {}};
  if (kind == request_kind::read && !rules.reads_need_token)
    return {true, {}};
  auto cookie = rules.sessions == nullptr || rules.cookie_name.empty()
                  ? std::string{}
                  : cookie_value(credentials.cookie, rules.cookie_name);
  if (!cookie.empty()) {
    auto session = rules.sessions->find(cookie, now);
    if (!session)
      return {false, expired_refusal};
    if (kind == request_kind::read || storage::same_secret(credentials.csrf, session->csrf))
      return {true, {}};
    return {false, csrf_refusal};
  }
  // The dashboard's page always sends its CSRF header; an API client does not.
  if (rules.sessions != nullptr && !credentials.csrf.empty())
    return {false, sign_in_refusal};
  return {false, token_refusal};
}

} // namespace cdui::apps
