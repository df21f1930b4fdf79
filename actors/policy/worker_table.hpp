#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/worker.hpp"

namespace cdui::policy {

/// Whether `name` may name a worker: 1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-', and
/// not a word options.target.worker gives another meaning (local, any). It
/// names a folder on the worker and a key on the server, so nothing that could leave either.
[[nodiscard]] bool is_valid_worker_name(std::string_view name);
/// The rule, as refusals say it.
inline constexpr const char* worker_name_rule =
  "1 to 64 letters, digits, '.', '_' or '-', not starting with '.' or '-', and not 'local' or 'any'";

/// A worker's status as the Workers panel shows it (seed 001).
enum class worker_status { online, degraded, draining, disconnected, disabled };

[[nodiscard]] std::string_view to_string(worker_status s);

/// Everything the server knows of one worker.
struct worker_record {
  std::string name;
  /// The ZeroMQ routing id of its current connection.
  std::string identity;
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

  /// Whether new runs may be placed on it: connected, on time and not draining. A worker whose node
  /// types differ is Degraded but still takes runs (the operator sees why).
  [[nodiscard]] bool accepts_runs() const {
    return status != worker_status::disconnected && status != worker_status::disabled && !late
           && !draining;
  }
};

/// An agent the server would not take, kept for the operator.
struct refused_connection {
  std::string name;
  std::string version;
  std::string reason;
  std::int64_t time_ms = 0;
};

/// The registry's policy: who may join, and what each worker's status is. Plain data, no clock
/// (time is passed in), no socket: the worker_registry actor holds one and says what it decides.
class worker_table {
public:
  struct config {
    std::string version;            // the server's cdui version; another one is refused
    std::string node_types_digest;  // the server's; another one makes a worker Degraded
    std::string token;              // a same-host agent's credential: the session token
    std::int64_t heartbeat_ms = 10000;
    /// Enrolled workers: name -> the SHA-256 (hex) of its credential (storage/credentials.hpp).
    std::map<std::string, std::string> enrolled;
  };

  /// A heartbeat later than this many intervals makes the worker Degraded...
  static constexpr double late_after_intervals = 2.0;
  /// ...and one later than this many, Disconnected.
  static constexpr double gone_after_intervals = 3.0;
  /// The refused connections kept for the operator, newest last.
  static constexpr std::size_t refused_kept = 50;

  explicit worker_table(config cfg) : cfg_(std::move(cfg)) {}

  /// The answer to a hello: accepted, or the reason it was refused.
  struct verdict {
    bool accepted = false;
    std::string reason;
    /// A worker the hello took the name from (its older connection), to be told so.
    std::optional<std::string> replaced_identity;
  };
  /// A hello from the connection `identity`. The newest connection of a name wins: an agent that
  /// restarted replaces its old connection.
  [[nodiscard]] verdict hello(const std::string& identity, const cdui::hello& h, std::int64_t now_ms);

  /// A heartbeat; false when `identity` is no worker's current connection (it must say hello).
  bool heartbeat(const std::string& identity, const cdui::heartbeat& h, std::int64_t now_ms);

  /// Late heartbeats: Online -> Degraded -> Disconnected. Returns the names whose status changed.
  std::vector<std::string> tick(std::int64_t now_ms);

  /// Enrolls `name` with its credential's hash, or replaces the hash (re-key). A connection that
  /// proved itself with the old credential stays; its next hello needs the new one.
  void enroll(const std::string& name, const std::string& credential_hash);
  [[nodiscard]] bool is_enrolled(const std::string& name) const { return cfg_.enrolled.count(name) > 0; }

  /// Forgets a worker (an operator removed it): its enrollment, its entry and its connection.
  /// Returns its entry as it was; nullopt when it had neither an entry nor an enrollment.
  std::optional<worker_record> remove(const std::string& name);

  /// Drain (no new runs) or undrain; false for an unknown name.
  bool set_draining(const std::string& name, bool draining, std::int64_t now_ms);

  [[nodiscard]] const worker_record* by_identity(const std::string& identity) const;
  [[nodiscard]] const worker_record* by_name(const std::string& name) const;
  [[nodiscard]] const std::map<std::string, worker_record>& workers() const { return workers_; }
  [[nodiscard]] const std::deque<refused_connection>& refused() const { return refused_; }
  [[nodiscard]] const config& settings() const { return cfg_; }

private:
  verdict refuse(const cdui::hello& h, std::string reason, std::int64_t now_ms);
  /// The status a worker has from its own facts at `now` (heartbeat age, digests, draining).
  void update_status(worker_record& w, std::int64_t now_ms) const;

  config cfg_;
  std::map<std::string, worker_record> workers_;    // by name
  std::map<std::string, std::string> identities_;   // routing id -> name, current connections
  std::deque<refused_connection> refused_;
};

} // namespace cdui::policy
