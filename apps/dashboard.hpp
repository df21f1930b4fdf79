#pragma once

#include <memory>
#include <string_view>

#include "apps/http_access.hpp"

namespace httplib {
class Server;
}

namespace cdui::apps {

/// Whether `path` is the dashboard's page (`/`, /ui/...) or its sign-in state (GET /api/ui/session):
/// what a browser loads before it has signed in, so reads that need the token let it through.
[[nodiscard]] bool is_dashboard_page(std::string_view path);

/// Serves the dashboard (docs/dashboard.md): its page at `/` and its files under /ui/ with a strict
/// Content-Security-Policy; GET /ui/login?code=..., the one-time link that signs a browser in (an
/// HttpOnly, SameSite=Strict cookie named rules.cookie_name, then a redirect to `/`); POST
/// /api/ui/links, which makes such a link for the token's holder (`cdui ui`); and GET
/// /api/ui/session, whether this browser has signed in, with its anti-CSRF value when it has.
/// `rules.sessions` is `sessions`.
void mount_dashboard(httplib::Server& http, std::shared_ptr<browser_sessions> sessions,
                     access_rules rules);

} // namespace cdui::apps
