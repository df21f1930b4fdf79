#include "apps/dashboard.hpp"

#include <chrono>
#include <string>

#include <httplib.h>

#include "apps/dashboard_files.hpp"
#include "apps/http_edge.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;
using std::chrono::duration_cast;
using std::chrono::seconds;

/// What every answer of the dashboard's page carries: its CSP, no sniffing, no framing, no
/// referrer (a sign-in link's code must not leave in one).
void page_headers(httplib::Response& res) {
  res.set_header("Content-Security-Policy", dashboard_csp);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
}

/// The page a used, expired or unknown link opens: no script, a way to the read-only dashboard.
std::string stale_link_page() {
  auto minutes = std::chrono::duration_cast<std::chrono::minutes>(sign_in_link_lifetime).count();
  return R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>cdui: sign-in link not valid</title>
<link rel="stylesheet" href="/ui/style.css"></head>
<body><main class="stale-link"><h1>This sign-in link is not valid</h1>
<p>A link from <code>cdui ui</code> signs one browser in, once, within )"
         + std::to_string(minutes) + R"( minutes; this one was used already, has expired, or
is from a server that has restarted since.</p>
<p>Run <code>cdui ui</code> on the server's machine again and open the new link it prints.
<a href="/">The dashboard</a> is read-only until then.</p></main></body></html>
)";
}

void serve_file(const httplib::Request& req, httplib::Response& res) {
  const auto* file = find_dashboard_file(req.path);
  page_headers(res);
  if (file == nullptr) {
    refuse(res, 404, "no such file of the dashboard: " + req.path);
    return;
  }
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_content(std::string{file->bytes}, std::string{file->content_type});
}

void sign_in(browser_sessions& sessions, const std::string& cookie_name, const httplib::Request& req,
             httplib::Response& res) {
  page_headers(res);
  res.set_header("Cache-Control", "no-store");
  auto session = sessions.redeem(req.get_param_value("code"), browser_sessions::clock::now());
  if (!session) {
    res.status = 403;
    res.set_content(stale_link_page(), "text/html; charset=utf-8");
    return;
  }
  // HttpOnly: no script reads it; SameSite=Strict: no other site's page makes the browser send it.
  res.set_header("Set-Cookie", cookie_name + "=" + session->id + "; Path=/; HttpOnly; SameSite=Strict; Max-Age="
                                 + std::to_string(duration_cast<seconds>(browser_session_lifetime).count()));
  res.status = 303;
  res.set_header("Location", "/");
}

/// GET /api/ui/session: whether the browser's cookie is a live sign-in; its anti-CSRF value if so,
/// else the sentence that says how to sign in.
json session_json(const access_rules& rules, const httplib::Request& req) {
  auto cookie = cookie_value(req.get_header_value("Cookie"), rules.cookie_name);
  auto session = rules.sessions->find(cookie, browser_sessions::clock::now());
  json answer{{"signed_in", session.has_value()},
              {"csrf", session ? json(session->csrf) : json(nullptr)},
              {"reads_need_sign_in", rules.reads_need_token},
              {"sign_in", session ? json(nullptr)
                                  : json(cookie.empty() ? sign_in_refusal : expired_refusal)}};
  return answer;
}

} // namespace

void add_dashboard_routes(route_table& routes, std::shared_ptr<browser_sessions> sessions,
                          access_rules rules) {
  rules.sessions = sessions.get();
  routes.get("/ui/login", route_access::open,
             [sessions, name = rules.cookie_name](const httplib::Request& req, httplib::Response& res) {
               sign_in(*sessions, name, req, res);
             });
  routes.get("/", route_access::open, serve_file);
  routes.get(R"(/ui/.+)", route_access::open, serve_file);
  // A signed-in browser makes no links: `cdui ui` does, with the token.
  routes.add("POST", "/api/ui/links", route_access::token_only,
             [sessions](const httplib::Request&, httplib::Response& res) {
               auto code = sessions->new_code(browser_sessions::clock::now());
               reply(res, 200, {{"path", "/ui/login?code=" + code},
                                {"expires_in_s", duration_cast<seconds>(sign_in_link_lifetime).count()}});
             });
  routes.get("/api/ui/session", route_access::open, [rules](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    reply(res, 200, session_json(rules, req));
  });
  // Signing out: a change, so the cookie counts only with its anti-CSRF header; the cookie is
  // cleared in any case.
  routes.del("/api/ui/session", [sessions, rules](const httplib::Request& req, httplib::Response& res) {
    bool ended = sessions->end(cookie_value(req.get_header_value("Cookie"), rules.cookie_name));
    res.set_header("Set-Cookie", rules.cookie_name + "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    res.set_header("Cache-Control", "no-store");
    reply(res, 200, {{"signed_out", ended}});
  });
}

} // namespace cdui::apps
