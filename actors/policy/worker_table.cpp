#include "actors/policy/worker_table.hpp"

#include <cstdio>

#include "messages/text.hpp"
#include "storage/credentials.hpp"

namespace cdui::policy {

namespace {

std::string seconds_text(std::int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

} // namespace

bool is_valid_worker_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name[0] == '.' || name[0] == '-')
    return false;
  if (name == "local" || name == "any")  // what options.target.worker means otherwise
    return false;
  return name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
         == std::string_view::npos;
}

std::string_view to_string(worker_status s) {
  switch (s) {
  case worker_status::online: return "online";
  case worker_status::degraded: return "degraded";
  case worker_status::draining: return "draining";
  case worker_status::disconnected: return "disconnected";
  case worker_status::disabled: return "disabled";
  }
  return "unknown";
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
  auto enrolled = cfg_.enrolled.find(h.name);
  bool by_enrollment = !by_token && enrolled != cfg_.enrolled.end()
                       && storage::same_secret(storage::credential_hash(h.credential), enrolled->second);
  if (!by_token && !by_enrollment) {
    if (enrolled != cfg_.enrolled.end())
      return refuse(h, "the credential is not valid for worker '" + h.name + "': it is not the one "
                       "its latest enrollment or re-key gave (a re-key ends the old one)", now_ms);
    return refuse(h, "the credential is not valid: it is not this server's session token (a "
                     "same-host agent reads it from $CODEFYUI_HOME/session.token; check that it uses "
                     "the server's home), and no worker named '" + h.name + "' is enrolled (POST "
                     "/api/workers/enroll)", now_ms);
  }
  verdict v{true, "", std::nullopt};
  auto& w = workers_[h.name];
  if (!w.identity.empty() && w.identity != identity && identities_.count(w.identity)) {
    v.replaced_identity = w.identity;
    identities_.erase(w.identity);
  }
  bool draining = w.draining;  // an operator's drain outlives a reconnect
  w = worker_record{};
  w.name = h.name;
  w.identity = identity;
  w.version = h.version;
  w.env_digest = h.env_digest;
  w.node_types_digest = h.node_types_digest;
  w.devices = h.devices;
  w.running_runs = h.running_runs;
  w.one_shot = h.one_shot;
  w.enrolled = by_enrollment;
  w.draining = draining;
  w.connected_ms = now_ms;
  w.last_heartbeat_ms = now_ms;
  identities_[identity] = h.name;
  update_status(w, now_ms);
  return v;
}

bool worker_table::heartbeat(const std::string& identity, const cdui::heartbeat& h,
                             std::int64_t now_ms) {
  auto i = identities_.find(identity);
  if (i == identities_.end())
    return false;
  auto& w = workers_.at(i->second);
  w.devices = h.devices;
  w.running_runs = h.running_runs;
  w.last_heartbeat_ms = now_ms;
  update_status(w, now_ms);
  return true;
}

void worker_table::update_status(worker_record& w, std::int64_t now_ms) const {
  auto age = now_ms - w.last_heartbeat_ms;
  w.late = age > static_cast<std::int64_t>(late_after_intervals * cfg_.heartbeat_ms);
  if (age > static_cast<std::int64_t>(gone_after_intervals * cfg_.heartbeat_ms)) {
    if (w.status != worker_status::disconnected)
      w.disconnected_ms = now_ms;
    w.status = worker_status::disconnected;
    w.reason = "no heartbeat for " + seconds_text(age);
  } else if (w.late) {
    w.status = worker_status::degraded;
    w.reason = "heartbeat late: the last one came " + seconds_text(age) + " ago";
  } else if (w.node_types_digest != cfg_.node_types_digest) {
    w.status = worker_status::degraded;
    w.reason = "its node types differ from the server's (digest " + w.node_types_digest
               + ", the server's " + cfg_.node_types_digest + ")";
  } else if (w.draining) {
    w.status = worker_status::draining;
    w.reason.clear();
  } else {
    w.status = worker_status::online;
    w.reason.clear();
  }
}

std::vector<std::string> worker_table::tick(std::int64_t now_ms) {
  std::vector<std::string> changed;
  for (auto& [name, w] : workers_) {
    if (w.status == worker_status::disconnected)
      continue;  // stays until it says hello again
    auto before = w.status;
    update_status(w, now_ms);
    if (w.status == worker_status::disconnected)
      identities_.erase(w.identity);
    if (w.status != before)
      changed.push_back(name);
  }
  return changed;
}

void worker_table::enroll(const std::string& name, const std::string& credential_hash) {
  cfg_.enrolled[name] = credential_hash;
}

std::optional<worker_record> worker_table::remove(const std::string& name) {
  bool was_enrolled = cfg_.enrolled.erase(name) > 0;
  auto i = workers_.find(name);
  if (i == workers_.end())
    return was_enrolled ? std::optional<worker_record>{worker_record{}} : std::nullopt;
  auto removed = std::move(i->second);
  workers_.erase(i);
  identities_.erase(removed.identity);
  return removed;
}

bool worker_table::set_draining(const std::string& name, bool draining, std::int64_t now_ms) {
  auto i = workers_.find(name);
  if (i == workers_.end())
    return false;
  i->second.draining = draining;
  if (i->second.status != worker_status::disconnected)
    update_status(i->second, now_ms);
  return true;
}

const worker_record* worker_table::by_identity(const std::string& identity) const {
  auto i = identities_.find(identity);
  return i == identities_.end() ? nullptr : &workers_.at(i->second);
}

const worker_record* worker_table::by_name(const std::string& name) const {
  auto i = workers_.find(name);
  return i == workers_.end() ? nullptr : &i->second;
}

} // namespace cdui::policy
