#include "apps/browser_sessions.hpp"

#include <algorithm>

#include "storage/credentials.hpp"

namespace cdui::apps {

namespace {

/// Drops the entry that expires first while `entries` holds `max` or more.
template <typename Map, typename Expiry>
void make_room(Map& entries, std::size_t max, Expiry expiry) {
  while (!entries.empty() && entries.size() >= max)
    entries.erase(std::min_element(entries.begin(), entries.end(),
                                   [&](const auto& a, const auto& b) { return expiry(a) < expiry(b); }));
}

} // namespace

std::string browser_sessions::new_code(clock::time_point now) {
  auto code = storage::random_secret();
  std::lock_guard<std::mutex> lock{mutex_};
  forget_expired(now);
  make_room(codes_, max_sign_in_codes, [](const auto& e) { return e.second; });
  codes_[storage::credential_hash(code)] = now + sign_in_link_lifetime;
  return code;
}

std::optional<browser_session> browser_sessions::redeem(std::string_view code, clock::time_point now) {
  auto key = storage::credential_hash(code);
  browser_session session{storage::random_secret(), storage::random_secret()};
  std::lock_guard<std::mutex> lock{mutex_};
  forget_expired(now);
  auto found = codes_.find(key);
  if (found == codes_.end())
    return std::nullopt;
  codes_.erase(found);
  make_room(sessions_, max_browser_sessions, [](const auto& e) { return e.second.expires; });
  sessions_[storage::credential_hash(session.id)] = {session, now + browser_session_lifetime};
  return session;
}

std::optional<browser_session> browser_sessions::find(std::string_view id, clock::time_point now) const {
  if (id.empty())
    return std::nullopt;
  auto key = storage::credential_hash(id);
  std::lock_guard<std::mutex> lock{mutex_};
  auto found = sessions_.find(key);
  if (found == sessions_.end() || found->second.expires <= now)
    return std::nullopt;
  return found->second.session;
}

bool browser_sessions::end(std::string_view id) {
  if (id.empty())
    return false;
  auto key = storage::credential_hash(id);
  std::lock_guard<std::mutex> lock{mutex_};
  return sessions_.erase(key) > 0;
}

void browser_sessions::forget_expired(clock::time_point now) {
  for (auto it = codes_.begin(); it != codes_.end();)
    it = it->second <= now ? codes_.erase(it) : std::next(it);
  for (auto it = sessions_.begin(); it != sessions_.end();)
    it = it->second.expires <= now ? sessions_.erase(it) : std::next(it);
}

} // namespace cdui::apps
