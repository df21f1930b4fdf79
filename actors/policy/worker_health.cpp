#include "actors/policy/worker_health.hpp"

#include <cstdio>

namespace cdui::policy {

namespace {

std::string seconds_text(std::int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

} // namespace

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

worker_health::worker_health(settings s, const cdui::hello& h, bool enrolled, bool draining,
                             std::int64_t now_ms)
    : cfg_(std::move(s)) {
  w_.name = h.name;
  w_.version = h.version;
  w_.env_digest = h.env_digest;
  w_.node_types_digest = h.node_types_digest;
  w_.devices = h.devices;
  w_.running_runs = h.running_runs;
  w_.one_shot = h.one_shot;
  w_.enrolled = enrolled;
  w_.draining = draining;
  w_.connected_ms = now_ms;
  w_.last_heartbeat_ms = now_ms;
  update(now_ms);
}

void worker_health::heartbeat(const cdui::heartbeat& h, std::int64_t now_ms) {
  if (w_.status == worker_status::disconnected)
    return;  // its connection was given up: it says hello again
  w_.devices = h.devices;
  w_.running_runs = h.running_runs;
  w_.last_heartbeat_ms = now_ms;
  update(now_ms);
}

bool worker_health::tick(std::int64_t now_ms) {
  if (w_.status == worker_status::disconnected)
    return false;
  auto before = w_.status;
  update(now_ms);
  return w_.status != before;
}

void worker_health::lose(std::string why, std::int64_t now_ms) {
  if (w_.status == worker_status::disconnected)
    return;
  w_.status = worker_status::disconnected;
  w_.disconnected_ms = now_ms;
  w_.reason = std::move(why);
}

void worker_health::set_draining(bool draining, std::int64_t now_ms) {
  w_.draining = draining;
  if (w_.status != worker_status::disconnected)
    update(now_ms);
}

worker_availability worker_health::availability() const {
  if (w_.status == worker_status::disconnected)
    return worker_availability::disconnected;
  if (w_.status == worker_status::disabled)
    return worker_availability::disabled;
  // Before late: a drain lasts until the operator undoes it, a late heartbeat may come any moment.
  if (w_.draining)
    return worker_availability::draining;
  return w_.late ? worker_availability::late : worker_availability::open;
}

void worker_health::update(std::int64_t now_ms) {
  auto age = now_ms - w_.last_heartbeat_ms;
  w_.late = age > static_cast<std::int64_t>(late_after_intervals * cfg_.heartbeat_ms);
  if (age > static_cast<std::int64_t>(gone_after_intervals * cfg_.heartbeat_ms)) {
    w_.disconnected_ms = now_ms;
    w_.status = worker_status::disconnected;
    w_.reason = "no heartbeat for " + seconds_text(age);
  } else if (w_.late) {
    w_.status = worker_status::degraded;
    w_.reason = "heartbeat late: the last one came " + seconds_text(age) + " ago";
  } else if (w_.node_types_digest != cfg_.node_types_digest) {
    w_.status = worker_status::degraded;
    w_.reason = "its node types differ from the server's (digest " + w_.node_types_digest
                + ", the server's " + cfg_.node_types_digest + ")";
  } else if (w_.draining) {
    w_.status = worker_status::draining;
    w_.reason.clear();
  } else {
    w_.status = worker_status::online;
    w_.reason.clear();
  }
}

} // namespace cdui::policy
