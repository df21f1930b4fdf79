#include "apps/http_settings.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "messages/text.hpp"

namespace cdui::apps {

namespace {

/// The whole number in environment variable `var` in [min, max], or `fallback` when it is unset.
std::size_t read_number(const char* var, std::size_t min, std::size_t max, std::size_t fallback,
                        const char* unit) {
  const char* raw = std::getenv(var);
  if (raw == nullptr || *raw == '\0')
    return fallback;
  std::string text{raw};
  // Digits only: stoull alone would take "-5" and stop quietly at "12abc".
  if (text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos) {
    auto value = static_cast<std::size_t>(std::stoull(text));
    if (value >= min && value <= max)
      return value;
  }
  throw std::invalid_argument(std::string{var} + " is " + text::quoted(text) + ", not a whole "
                              "number of " + unit + " from " + std::to_string(min) + " to "
                              + std::to_string(max));
}

} // namespace

http_limits read_http_limits(std::optional<std::size_t> max_body_mb, std::size_t max_connections_cap) {
  http_limits limits;
  auto mb = max_body_mb ? *max_body_mb
                        : read_number(max_body_env, 1, max_body_mb_limit,
                                      default_max_body_bytes >> 20, "MiB");
  limits.max_body_bytes = mb << 20;
  limits.read_deadline = std::chrono::seconds(
    read_number(read_deadline_env, 1, 3600, default_read_deadline.count(), "seconds"));
  limits.max_connections_per_client =
    read_number(max_connections_env, 1, max_connections_cap,
                std::min(default_max_connections_per_client, max_connections_cap), "connections");
  limits.max_body_setting = std::string{"cdui start --max-body-mb N, or "} + max_body_env;
  limits.max_connections_setting = max_connections_env;
  return limits;
}

bool reads_need_token(bool listens_on_loopback, std::string_view setting) {
  if (setting == "on")
    return true;
  if (setting.empty() || setting == "auto")
    return !listens_on_loopback;
  throw std::invalid_argument(std::string{read_token_env} + " is " + text::quoted(setting)
                              + "; it is 'auto' (reads need the session token unless the server "
                                "listens on loopback) or 'on' (always)");
}

} // namespace cdui::apps
