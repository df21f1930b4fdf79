#pragma once

#include <memory>

#include "apps/http_access.hpp"
#include "apps/http_routes.hpp"

namespace cdui::apps {

/// Adds the dashboard's routes (docs/dashboard.md) to `routes`: its page at `/` and its files under
/// /ui/ with a strict Content-Security-Policy; GET /ui/login?code=..., the one-time link that signs
/// a browser in (an HttpOnly, SameSite=Strict cookie named rules.cookie_name, then a redirect to
/// `/`); POST /api/ui/links, which makes such a link for the token's holder (`cdui ui`); GET
/// /api/ui/session, whether this browser has signed in, with its anti-CSRF value when it has; and
/// DELETE /api/ui/session, signing out. `rules.sessions` is `sessions`.
void add_dashboard_routes(route_table& routes, std::shared_ptr<browser_sessions> sessions,
                          access_rules rules);

} // namespace cdui::apps
