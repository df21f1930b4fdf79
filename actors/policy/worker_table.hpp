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

/// Whether `name` is a fleet's enrollment: a prefix of worker names followed by '*' ("slurm-*"),
/// the prefix 1 to 63 of the characters a worker name may hold, not starting with '.' or '-'. Its
/// one credential joins every worker whose name starts with the prefix and is not enrolled by name
/// (the nodes of a SLURM allocation, the pods of a Kubernetes DaemonSet).
[[nodiscard]] bool is_fleet_pattern(std::string_view name);
/// What an enrollment may name: a worker (is_valid_worker_name) or a fleet (is_fleet_pattern).
[[nodiscard]] bool is_valid_enrollment(std::string_view name);
/// The rule, as refusals say it.
inline constexpr const char* enrollment_rule =
  "a worker name (1 to 64 letters, digits, '.', '_' or '-', not starting with '.' or '-', and not "
  "'local' or 'any'), or a fleet's prefix of one followed by '*' (e.g. 'slurm-*')";

/// A worker the server took, as the registry keeps it: how to reach it, what it said when it
/// joined, and the operator's drain. Its status over time is its actor's (worker_health).
struct worker_connection {
  /// The ZeroMQ routing id of its current connection; empty once the connection is lost.
  std::string identity;
  /// Its last accepted hello, the credential taken out.
  cdui::hello hello;
  /// How it proved itself: with its enrolled credential (a remote worker), else the session token.
  bool enrolled = false;
  /// The enrollment it joined by: its name, or its fleet's pattern ("slurm-*"); empty with the
  /// session token.
  std::string enrollment;
  /// An operator's drain; it outlives a reconnect.
  bool draining = false;
};

/// An agent the server would not take, kept for the operator.
struct refused_connection {
  std::string name;
  std::string version;
  std::string reason;
  std::int64_t time_ms = 0;
};

/// The registry's policy: who may join, under which name, over which connection. Plain data, no
/// clock (time is passed in), no socket: the worker_registry actor holds one and says what it
/// decides; each worker's status is its own actor's (worker_health.hpp).
class worker_table {
public:
  struct config {
    std::string version;            // the server's cdui version; another one is refused
    std::string node_types_digest;  // the server's; another one makes a worker Degraded
    std::string token;              // a same-host agent's credential: the session token
    std::int64_t heartbeat_ms = 10000;
    /// Enrolled workers and fleets: name or pattern -> the SHA-256 (hex) of its credential
    /// (storage/credentials.hpp).
    std::map<std::string, std::string> enrolled;
  };

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

  /// The worker's actor gave its connection up (no heartbeats): its messages are no longer its
  /// worker's. Nothing when `identity` is no longer its connection (a newer one said hello).
  void lost(const std::string& name, const std::string& identity);

  /// Enrolls `name` with its credential's hash, or replaces the hash (re-key). A connection that
  /// proved itself with the old credential stays; its next hello needs the new one.
  void enroll(const std::string& name, const std::string& credential_hash);
  [[nodiscard]] bool is_enrolled(const std::string& name) const { return cfg_.enrolled.count(name) > 0; }
  /// The enrollment a hello of worker `name` is judged by: its own, else the fleet with the
  /// longest prefix of it; nullptr when none.
  [[nodiscard]] const std::string* enrollment_of(const std::string& name) const;
  /// The workers that joined by the enrollment `name` (a fleet's members, or the worker itself).
  [[nodiscard]] std::vector<std::string> joined_by(const std::string& name) const;
  /// Whether a worker that joined by the enrollment `name` is connected now.
  [[nodiscard]] bool any_connected(const std::string& name) const;

  /// Forgets a worker (an operator removed it): its enrollment, its entry and its connection.
  /// Returns its entry as it was; nullopt when it had neither an entry nor an enrollment. For a
  /// fleet's pattern: its enrollment (its members are removed one by one, by name).
  std::optional<worker_connection> remove(const std::string& name);

  /// Drain (no new runs) or undrain; false for a name that never joined.
  bool set_draining(const std::string& name, bool draining);

  /// The name whose current connection `identity` is; nullptr when none.
  [[nodiscard]] const std::string* by_identity(const std::string& identity) const;
  [[nodiscard]] const worker_connection* by_name(const std::string& name) const;
  /// Whether the worker `name` has a connection now.
  [[nodiscard]] bool connected(const std::string& name) const;
  [[nodiscard]] const std::map<std::string, worker_connection>& workers() const { return workers_; }
  [[nodiscard]] const std::deque<refused_connection>& refused() const { return refused_; }
  [[nodiscard]] const config& settings() const { return cfg_; }

private:
  verdict refuse(const cdui::hello& h, std::string reason, std::int64_t now_ms);

  config cfg_;
  std::map<std::string, worker_connection> workers_;  // by name
  std::map<std::string, std::string> identities_;     // routing id -> name, current connections
  std::deque<refused_connection> refused_;
};

} // namespace cdui::policy
