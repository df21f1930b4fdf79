#include "apps/http_access.hpp"
#include "apps/http_api.hpp"

#include <algorithm>
#include <cctype>

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

std::vector<std::string> loopback_host_names(const std::string& bind_host) {
  std::vector<std::string> names{"localhost", "127.0.0.1", "[::1]"};
  auto bound = bind_host.find(':') != std::string::npos && bind_host.front() != '[' ? "[" + bind_host + "]"
                                                                                   : bind_host;
  if (!bound.empty() && std::find(names.begin(), names.end(), bound) == names.end())
    names.push_back(bound);
  return names;
}

bool host_named(std::string_view host, const std::vector<std::string>& names) {
  if (host.empty())
    return true;
  // "[v6]:port" keeps its brackets; "name:port" loses the port.
  auto name = host.front() == '[' ? host.substr(0, host.find(']') + 1) : host.substr(0, host.rfind(':'));
  auto same = [name](const std::string& known) {
    return known.size() == name.size()
           && std::equal(known.begin(), known.end(), name.begin(), [](char a, char b) {
                return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
              });
  };
  return std::any_of(names.begin(), names.end(), same);
}

bool origin_named(std::string_view origin, const std::vector<std::string>& names) {
  for (std::string_view scheme : {"http://", "https://"})
    if (origin.substr(0, scheme.size()) == scheme) {
      auto authority = origin.substr(scheme.size());
      return !authority.empty() && authority.find('/') == std::string_view::npos
             && host_named(authority, names);
    }
  return false;
}

access_decision check_access(const request_credentials& credentials, request_kind kind,
                    const access_rules& rules, browser_sessions::clock::time_point now) {
  if (!credentials.token.empty() && storage::same_secret(credentials.token, rules.token))
    return {true, {}};
  if (!rules.host_names.empty() && !host_named(credentials.host, rules.host_names))
    return {false, "this server answers requests without its token only when they name it "
                   "localhost, 127.0.0.1 or [::1]; this one says Host: " + text::quoted(credentials.host)
                   + " (a web page that points its own name at this machine reads nothing)"};
  if (!rules.host_names.empty() && !credentials.origin.empty() && !origin_named(credentials.origin, rules.host_names))
    return {false, "a request from a page of another site (Origin: " + text::quoted(credentials.origin)
                   + ") needs the session token: only this server's own pages are trusted with a sign-in"};
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
