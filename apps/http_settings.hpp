#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "apps/http_guard.hpp"

namespace cdui::apps {

/// The body limit in MiB (`cdui start --max-body-mb` overrides it).
inline constexpr const char* max_body_env = "CODEFYUI_HTTP_MAX_BODY_MB";
/// Seconds a client has to send one request, headers and body.
inline constexpr const char* read_deadline_env = "CODEFYUI_HTTP_READ_DEADLINE_S";
/// Connections one client address may hold open.
inline constexpr const char* max_connections_env = "CODEFYUI_HTTP_MAX_CONNECTIONS_PER_CLIENT";
/// `on`: reads need the session token even on loopback; `auto` (the default): only beyond it.
inline constexpr const char* read_token_env = "CODEFYUI_HTTP_READ_TOKEN";

/// The largest --max-body-mb: the server holds a body in memory while it handles it.
inline constexpr std::size_t max_body_mb_limit = 1024;

/// The server's HTTP limits from the environment, `max_body_mb` (--max-body-mb) over its variable.
/// `max_connections_cap`: the most connections per client allowed, below the HTTP thread count so
/// that one address never holds every thread. Throws std::invalid_argument naming the setting when
/// one is not a whole number in its range.
[[nodiscard]] http_limits read_http_limits(std::optional<std::size_t> max_body_mb,
                                           std::size_t max_connections_cap);

/// Whether GET requests need the session token: always beyond loopback (anyone who reaches the
/// port would read every run's options and events), on loopback only when `setting` (the value of
/// CODEFYUI_HTTP_READ_TOKEN) is `on`. Throws std::invalid_argument for a value other than "",
/// `auto` or `on`.
[[nodiscard]] bool reads_need_token(bool listens_on_loopback, std::string_view setting);

} // namespace cdui::apps
