#include "actors/policy/worker_table.hpp"

#include "messages/text.hpp"
#include "storage/credentials.hpp"

namespace cdui::policy {

bool is_valid_worker_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name[0] == '.' || name[0] == '-')
    return false;
  if (name == "local" || name == "any")  // what options.target.worker means otherwise
    return false;
  return name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
         == std::string_view::npos;
}

bool is_fleet_pattern(std::string_view name) {
  if (name.size() < 2 || name.back() != '*')
    return false;
  auto prefix = name.substr(0, name.size() - 1);
  return prefix.size() <= 63 && prefix[0] != '.' && prefix[0] != '-'
         && prefix.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
              == std::string_view::npos;
}

bool is_valid_enrollment(std::string_view name) {
  return is_valid_worker_name(name) || is_fleet_pattern(name);
}

worker_table::verdict worker_table::refuse(const cdui::hello& h, std::string reason,
                                           std::int64_t now_ms) {
  refused_.push_back({h.name, h.version, reason, now_ms});
  while (refused_.size() > refused_kept)
    refused_.pop_front();
  return {false, std::move(reason), std::nullopt};
}

worker_table::verdict worker_table::hello(const std::string& identity, const cdui::hello& h,
                                          std::int64_t now_ms) {
  if (h.version != cfg_.version)
    return refuse(h, "the agent runs cdui " + h.version + " and this server runs cdui "
                       + cfg_.version + "; install the same version on both", now_ms);
  if (!is_valid_worker_name(h.name))
    return refuse(h, "the name " + text::quoted(h.name) + " is not a worker name (" + worker_name_rule + ")",
                  now_ms);
  bool by_token = !cfg_.token.empty() && storage::same_secret(h.credential, cfg_.token);
  const auto* enrollment = enrollment_of(h.name);
  bool by_enrollment = !by_token && enrollment != nullptr
                       && storage::same_secret(storage::credential_hash(h.credential), cfg_.enrolled.at(*enrollment));
  if (!by_token && !by_enrollment) {
    if (enrollment != nullptr && *enrollment == h.name)
      return refuse(h, "the credential is not valid for worker '" + h.name + "': it is not the one "
                       "its latest enrollment or re-key gave (a re-key ends the old one)", now_ms);
    if (enrollment != nullptr)
      return refuse(h, "the credential is not valid for worker '" + h.name + "': it is not the one "
                       "the latest enrollment or re-key of its fleet '" + *enrollment + "' gave (a "
                       "re-key ends the old one)", now_ms);
    return refuse(h, "the credential is not valid: it is not this server's session token (a "
                     "same-host agent reads it from $CODEFYUI_HOME/session.token; check that it uses "
                     "the server's home), and no worker named '" + h.name + "' is enrolled (enroll it "
                     "with `cdui workers enroll " + h.name + "` on the server's machine)", now_ms);
  }
  verdict v{true, "", std::nullopt};
  auto& w = workers_[h.name];
  if (!w.identity.empty() && w.identity != identity && identities_.count(w.identity)) {
    v.replaced_identity = w.identity;
    identities_.erase(w.identity);
  }
  w.identity = identity;  // an operator's drain outlives a reconnect
  w.hello = h;
  w.hello.credential.clear();
  w.enrolled = by_enrollment;
  w.enrollment = by_enrollment ? *enrollment : std::string{};
  identities_[identity] = h.name;
  return v;
}

void worker_table::lost(const std::string& name, const std::string& identity) {
  auto i = workers_.find(name);
  if (i == workers_.end() || i->second.identity != identity)
    return;
  identities_.erase(identity);
  i->second.identity.clear();
}

const std::string* worker_table::enrollment_of(const std::string& name) const {
  if (auto exact = cfg_.enrolled.find(name); exact != cfg_.enrolled.end())
    return &exact->first;
  const std::string* fleet = nullptr;
  for (const auto& [pattern, hash] : cfg_.enrolled)
    if (is_fleet_pattern(pattern) && name.size() + 1 >= pattern.size()
        && name.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0
        && (fleet == nullptr || pattern.size() > fleet->size()))
      fleet = &pattern;
  return fleet;
}

std::vector<std::string> worker_table::joined_by(const std::string& name) const {
  std::vector<std::string> out;
  for (const auto& [worker, c] : workers_)
    if (c.enrollment == name)
      out.push_back(worker);
  return out;
}

bool worker_table::any_connected(const std::string& name) const {
  for (const auto& worker : joined_by(name))
    if (connected(worker))
      return true;
  return false;
}

void worker_table::enroll(const std::string& name, const std::string& credential_hash) {
  cfg_.enrolled[name] = credential_hash;
}

std::optional<worker_connection> worker_table::remove(const std::string& name) {
  bool was_enrolled = cfg_.enrolled.erase(name) > 0;
  auto i = workers_.find(name);
  if (i == workers_.end())
    return was_enrolled ? std::optional<worker_connection>{worker_connection{}} : std::nullopt;
  auto removed = std::move(i->second);
  workers_.erase(i);
  identities_.erase(removed.identity);
  return removed;
}

bool worker_table::set_draining(const std::string& name, bool draining) {
  auto i = workers_.find(name);
  if (i == workers_.end())
    return false;
  i->second.draining = draining;
  return true;
}

const std::string* worker_table::by_identity(const std::string& identity) const {
  auto i = identities_.find(identity);
  return i == identities_.end() ? nullptr : &i->second;
}

const worker_connection* worker_table::by_name(const std::string& name) const {
  auto i = workers_.find(name);
  return i == workers_.end() ? nullptr : &i->second;
}

bool worker_table::connected(const std::string& name) const {
  const auto* w = by_name(name);
  return w != nullptr && !w->identity.empty();
}

} // namespace cdui::policy
