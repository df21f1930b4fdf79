#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/common/curve_keys.hpp"
#include "actors/common/zmq_socket_thread.hpp"
#include "actors/server/fwd.hpp"
#include "messages/actor_status.hpp"
#include "messages/wire.hpp"

namespace cdui::actors {

/// What the bridge has seen, for /api/status and /metrics.
using bridge_stats = bridge_status;

/// The server's end of the wire (docs/architecture.md, "The wire"): a ZeroMQ ROUTER socket on a
/// thread of its own (a zmq_socket_thread), never a CAF scheduler thread. A message from an agent is
/// [identity][envelope][payload]; one that passes every check of messages/wire.hpp (size,
/// envelope, version, a type an agent sends, a payload that decodes as that type) goes to `inbox`
/// as (wire_in, identity, payload struct).
/// Everything else is refused with a logged reason and a counter; the bridge never crashes or
/// stalls on bad input. send() is thread-safe: it queues the message and wakes the thread.
class zmq_bridge {
public:
  /// Binds `endpoint` (tcp://127.0.0.1:0 picks a free port) before it returns; throws
  /// std::runtime_error naming the endpoint when it cannot. Nothing is received before start().
  /// With `curve_secret_key` (Z85), the socket is a CURVE server: every connection is encrypted,
  /// and a peer that does not know the server's public key cannot complete its handshake.
  explicit zmq_bridge(const std::string& endpoint, const std::string& curve_secret_key = "");
  ~zmq_bridge();
  zmq_bridge(const zmq_bridge&) = delete;
  zmq_bridge& operator=(const zmq_bridge&) = delete;

  /// Starts the bridge's thread: from now on, messages go to `inbox`. Call once.
  void start(worker_registry_actor inbox);

  /// The bound endpoint, with its real port.
  [[nodiscard]] const std::string& endpoint() const { return endpoint_; }
  [[nodiscard]] bool encrypted() const { return encrypted_; }

  /// Sends `payload` (already wire::encode'd) to the agent behind `identity`. A peer that has gone
  /// drops it; the heartbeat tells the registry.
  void send(const std::string& identity, wire::message_type type, std::string payload);

  [[nodiscard]] bridge_stats stats() const;

private:
  /// Checks one incoming message and hands it to the inbox, or refuses it (on the socket's thread).
  void receive(const zmq_socket_thread::frames& parts);
  void refuse(const std::string& identity, wire::refusal why, const std::string& detail);

  std::string endpoint_;
  bool encrypted_ = false;
  worker_registry_actor inbox_;
  /// Routing ids that sent at least one valid message; only the socket's thread touches it.
  std::unordered_set<std::string> peers_seen_;
  std::atomic<std::uint64_t> frames_in_{0};
  std::atomic<std::uint64_t> frames_out_{0};
  std::atomic<std::uint64_t> peers_{0};
  std::array<std::atomic<std::uint64_t>, 4> refused_{};
  /// Last: its thread stops (and joins) before the members it uses are destroyed.
  std::unique_ptr<zmq_socket_thread> socket_;
};

} // namespace cdui::actors
