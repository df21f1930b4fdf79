#include "apps/http_routes.hpp"

namespace cdui::apps {

const char* to_string(route_access access) {
  switch (access) {
  case route_access::open:
    return "open";
  case route_access::read:
    return "read";
  case route_access::change:
    return "change";
  case route_access::token_only:
    return "token_only";
  }
  return "change";
}

namespace {

/// The start every path the pattern matches has: its characters up to the first that means more
/// than itself to a regex, less the one before a quantifier (`/runs/?` matches `/runs`); none for
/// a pattern with an alternative outside any group (`/a|/b`).
std::string literal_prefix(const std::string& pattern) {
  int depth = 0;
  for (char c : pattern) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == '|' && depth == 0)
      return {};
  }
  auto end = pattern.find_first_of("()[]{}.*+?|^$\\");
  if (end == std::string::npos)
    return pattern;
  if (end > 0 && (pattern[end] == '?' || pattern[end] == '*' || pattern[end] == '{'))
    --end;
  return pattern.substr(0, end);
}

} // namespace

void route_table::add(const char* method, std::string pattern, route_access access,
                      httplib::Server::Handler handler) {
  matchers_.push_back({literal_prefix(pattern), std::regex{pattern}});
  routes_.push_back({{method, std::move(pattern), access}, std::move(handler)});
}

const route* route_table::find(const std::string& method, const std::string& path) const {
  const auto& wanted = method == "HEAD" ? std::string{"GET"} : method;
  for (std::size_t i = 0; i < routes_.size(); ++i)
    if (routes_[i].declared.method == wanted && path.rfind(matchers_[i].prefix, 0) == 0
        && std::regex_match(path, matchers_[i].pattern))
      return &routes_[i];
  return nullptr;
}

std::vector<route_declaration> route_table::declarations() const {
  std::vector<route_declaration> out;
  out.reserve(routes_.size());
  for (const auto& r : routes_)
    out.push_back(r.declared);
  return out;
}

route_access access_needed(const route_table& table, const std::string& method, const std::string& path) {
  if (const auto* r = table.find(method, path))
    return r->declared.access;
  return method == "GET" || method == "HEAD" ? route_access::read : route_access::change;
}

access_decision decide(route_access access, const request_credentials& credentials,
                       const access_rules& rules, browser_sessions::clock::time_point now) {
  switch (access) {
  case route_access::open:
    return {true, {}};
  case route_access::read:
    return check_access(credentials, request_kind::read, rules, now);
  case route_access::change:
    break;
  case route_access::token_only: {
    auto token_only = rules;
    token_only.sessions = nullptr;
    return check_access(credentials, request_kind::change, token_only, now);
  }
  }
  return check_access(credentials, request_kind::change, rules, now);
}

} // namespace cdui::apps
