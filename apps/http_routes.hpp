#pragma once
// The HTTP edge's route table: every route the API and the dashboard answer, each declared with
// who may call it. The table decides a request's access once, before routing and before its body
// is read (mount_routes' pre-routing filter); no handler checks it again, and none can forget to.

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <httplib.h>

#include "apps/http_access.hpp"
#include "apps/http_api.hpp"

namespace cdui::apps {

/// One route: its declaration and its handler.
struct route {
  route_declaration declared;
  httplib::Server::Handler handler;
};

/// The routes in the order they are added; the first whose method and pattern match a request is
/// the one that answers it, as in cpp-httplib.
class route_table {
public:
  void add(const char* method, std::string pattern, route_access access, httplib::Server::Handler handler);
  void get(std::string pattern, route_access access, httplib::Server::Handler handler) {
    add("GET", std::move(pattern), access, std::move(handler));
  }
  void post(std::string pattern, httplib::Server::Handler handler) {
    add("POST", std::move(pattern), route_access::change, std::move(handler));
  }
  void put(std::string pattern, httplib::Server::Handler handler) {
    add("PUT", std::move(pattern), route_access::change, std::move(handler));
  }
  void del(std::string pattern, httplib::Server::Handler handler) {
    add("DELETE", std::move(pattern), route_access::change, std::move(handler));
  }

  /// The route that answers `method` (HEAD as GET) on `path`; nullptr when none does.
  [[nodiscard]] const route* find(const std::string& method, const std::string& path) const;
  [[nodiscard]] std::vector<route_declaration> declarations() const;
  [[nodiscard]] const std::vector<route>& routes() const { return routes_; }

private:
  struct matcher {
    std::string prefix;  // the pattern's literal start: most paths fail on it, without a regex
    std::regex pattern;
  };
  std::vector<route> routes_;
  std::vector<matcher> matchers_;
};

/// The access a request needs: its route's declaration, or for a path no route answers, a read for
/// GET and HEAD and a change for any other method (it gets its 404 only once it may know that).
[[nodiscard]] route_access access_needed(const route_table& table, const std::string& method,
                                         const std::string& path);

/// Decides `access` for a request with `credentials` (check_access, and for token_only the same
/// rules without the browser sessions).
[[nodiscard]] access_decision decide(route_access access, const request_credentials& credentials,
                                     const access_rules& rules, browser_sessions::clock::time_point now);

} // namespace cdui::apps
