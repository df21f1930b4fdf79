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

/// Whether `rules` let `req` change something; false after a 403 with the refusal's sentence.
bool may_change(const httplib::Request& req, httplib::Response& res, const access_rules& rules) {
  auto decision = check_access(credentials_of(req), request_kind::change, rules,
                               browser_sessions::clock::now());
  if (!decision.allowed)
    refuse(res, 403, decision.refusal);
  return decision.allowed;
}

} // namespace

bool is_dashboard_page(std::string_view path) {
  return path == "/" || path.rfind("/ui/", 0) == 0 || path == "/api/ui/session";
}

void mount_dashboard(httplib::Server& http, std::shared_ptr<browser_sessions> sessions,
                     access_rules rules) {
  rules.sessions = sessions.get();
  auto token_only = rules;
  token_only.sessions = nullptr;  // a signed-in browser makes no links: `cdui ui` does
  http.Get("/ui/login", [sessions, name = rules.cookie_name](const httplib::Request& req,
                                                              httplib::Response& res) {
    sign_in(*sessions, name, req, res);
  });
  http.Get("/", serve_file);
  http.Get(R"(/ui/.+)", serve_file);
  http.Post("/api/ui/links", [sessions, token_only](const httplib::Request& req, httplib::Response& res) {
    if (!may_change(req, res, token_only))
      return;
    auto code = sessions->new_code(browser_sessions::clock::now());
    reply(res, 200, {{"path", "/ui/login?code=" + code},
                     {"expires_in_s", duration_cast<seconds>(sign_in_link_lifetime).count()}});
  });
  http.Get("/api/ui/session", [sessions, rules](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    reply(res, 200, session_json(rules, req));
  });
  // Signing out: a change, so the cookie counts only with its anti-CSRF header; the cookie is
  // cleared in any case.
  http.Delete("/api/ui/session", [sessions, rules](const httplib::Request& req, httplib::Response& res) {
    if (!may_change(req, res, rules))
      return;
    bool ended = sessions->end(cookie_value(req.get_header_value("Cookie"), rules.cookie_name));
    res.set_header("Set-Cookie", rules.cookie_name + "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    res.set_header("Cache-Control", "no-store");
    reply(res, 200, {{"signed_out", ended}});
  });
}

} // namespace cdui::apps
