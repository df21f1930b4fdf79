#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace cdui::apps {

/// How long the one-time link `cdui ui` prints works: time to switch from the terminal to a browser.
inline constexpr std::chrono::minutes sign_in_link_lifetime{5};
/// How long a browser stays signed in after it opened the link (its cookie's Max-Age); a server
/// restart ends every sign-in sooner.
inline constexpr std::chrono::hours browser_session_lifetime{12};
/// The most unused codes and live sessions kept: beyond them the oldest goes, so that no client,
/// however many links it asks for, grows the server's memory.
inline constexpr std::size_t max_sign_in_codes = 32;
inline constexpr std::size_t max_browser_sessions = 256;

/// A browser that signed in with a one-time link: the value of its HttpOnly cookie, and the
/// anti-CSRF value its page sends back in a header with every action.
struct browser_session {
  std::string id;
  std::string csrf;
};

/// The one-time sign-in codes `cdui ui` asks for and the browser sessions they open
/// (docs/dashboard.md#signing-in). Codes and session ids are kept by their SHA-256 only, so that
/// looking one up compares no secret byte by byte. Thread-safe; the time is passed in.
class browser_sessions {
public:
  using clock = std::chrono::steady_clock;

  /// A new one-time code (64 hex digits), valid until `now` + sign_in_link_lifetime.
  [[nodiscard]] std::string new_code(clock::time_point now);
  /// Trades `code` for a new session; nullopt when the code is unknown, was used already or has
  /// expired. A code opens one session at most: it is gone once redeemed.
  [[nodiscard]] std::optional<browser_session> redeem(std::string_view code, clock::time_point now);
  /// The live session whose cookie value is `id`; nullopt when there is none or it has expired.
  [[nodiscard]] std::optional<browser_session> find(std::string_view id, clock::time_point now) const;
  /// Ends the session whose cookie value is `id` (signing out); false when there was none.
  bool end(std::string_view id);

private:
  struct session_entry {
    browser_session session;
    clock::time_point expires;
  };
  void forget_expired(clock::time_point now);

  mutable std::mutex mutex_;
  std::map<std::string, clock::time_point> codes_;  // the code's hash -> when it expires
  std::map<std::string, session_entry> sessions_;   // the id's hash -> the session
};

} // namespace cdui::apps
