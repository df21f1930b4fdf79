#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "messages/worker.hpp"

namespace cdui::policy {

/// A worker's status as the Workers panel shows it (docs/workers.md, "Statuses").
enum class worker_status { online, degraded, draining, disconnected, disabled };

[[nodiscard]] std::string_view to_string(worker_status s);

/// What the server knows of one connected worker: its hello's facts, its heartbeats' and its status.
struct worker_record {
  std::string name;
  std::string version;
  std::string env_digest;
  std::string node_types_digest;
  std::vector<device_offer> devices;
  std::vector<std::string> running_runs;
  bool one_shot = false;
  /// How it proved itself: with its enrolled credential (a remote worker), else the session token.
  bool enrolled = false;
  bool draining = false;
  worker_status status = worker_status::online;
  /// Why it is degraded or disconnected; empty when online.
  std::string reason;
  std::int64_t connected_ms = 0;
  std::int64_t last_heartbeat_ms = 0;
  /// Whether its last heartbeat is late (more than late_after_intervals ago).
  bool late = false;
  /// When it was marked Disconnected; 0 while connected.
  std::int64_t disconnected_ms = 0;
};

/// One worker's status over (given) time, from its hello, its heartbeats and the operator's drain:
/// Online, Degraded (late, or other node types) or Draining, and Disconnected once its heartbeats
/// stop. Plain data, no clock: the worker's actor (actors/server/worker_proxy.*) holds one, feeds
/// it what arrives and ticks it, and says what changed.
class worker_health {
public:
  struct settings {
    std::string node_types_digest;  // the server's; another one makes a worker Degraded
    std::int64_t heartbeat_ms = 10000;
  };

  /// A heartbeat later than this many intervals makes the worker Degraded...
  static constexpr double late_after_intervals = 2.0;
  /// ...and one later than this many, Disconnected.
  static constexpr double gone_after_intervals = 3.0;

  /// A worker that said hello at `now_ms` (its heartbeat deadline starts then).
  worker_health(settings s, const cdui::hello& h, bool enrolled, bool draining, std::int64_t now_ms);

  /// A heartbeat: its devices and runs, and the deadline starts again.
  void heartbeat(const cdui::heartbeat& h, std::int64_t now_ms);
  /// Late heartbeats: Online -> Degraded -> Disconnected. True when the status changed. A
  /// Disconnected worker stays so (a hello makes a new worker_health).
  bool tick(std::int64_t now_ms);
  /// Its connection is gone some other way than by late heartbeats: Disconnected now, for `why`.
  void lose(std::string why, std::int64_t now_ms);
  /// The operator's drain (no new runs) or undrain.
  void set_draining(bool draining, std::int64_t now_ms);

  /// Whether new runs may be placed on it (open: connected, on time and not draining), and if not,
  /// why. A worker whose node types differ is Degraded but still takes runs (the operator sees why).
  [[nodiscard]] worker_availability availability() const;
  [[nodiscard]] bool accepts_runs() const { return availability() == worker_availability::open; }
  [[nodiscard]] const worker_record& record() const { return w_; }

private:
  /// The status it has from its own facts at `now` (heartbeat age, digests, draining).
  void update(std::int64_t now_ms);

  settings cfg_;
  worker_record w_;
};

} // namespace cdui::policy
