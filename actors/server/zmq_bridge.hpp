#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/common/curve_keys.hpp"
#include "messages/wire.hpp"

namespace cdui::actors {

/// What the bridge has seen, for /api/status. "frames" counts whole messages, not ZeroMQ frames.
struct bridge_stats {
  std::string endpoint;
  bool encrypted = false;
  std::uint64_t frames_in = 0;
  /// Messages handed to the socket; ROUTER drops, unseen, those for a peer that has gone.
  std::uint64_t frames_out = 0;
  /// Peers that have sent at least one valid message (garbage senders are not remembered).
  std::uint64_t peers = 0;
  /// Messages refused, by wire::refusal (too_large, malformed, wrong_version, unknown_type).
  std::array<std::uint64_t, 4> refused{};
};

/// The server's end of the wire (DESIGN.md, "Wire"): a ZeroMQ ROUTER socket on a thread of its
/// own, never a CAF scheduler thread. A message from an agent is [identity][envelope][payload]; one
/// that passes every check of messages/wire.hpp (size, envelope, version, a type an agent sends, a
/// payload that decodes as that type) goes to `inbox` as (wire_in, identity, payload struct).
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
  void start(caf::actor inbox);

  /// The bound endpoint, with its real port.
  [[nodiscard]] const std::string& endpoint() const { return endpoint_; }
  [[nodiscard]] bool encrypted() const { return encrypted_; }

  /// Sends `payload` (already wire::encode'd) to the agent behind `identity`. A peer that has gone
  /// drops it; the heartbeat tells the registry.
  void send(const std::string& identity, wire::message_type type, std::string payload);

  [[nodiscard]] bridge_stats stats() const;

private:
  struct outbound {
    std::string identity;
    wire::message_type type;
    std::string payload;
  };
  struct impl;

  void loop();
  void receive_one();
  void refuse(const std::string& identity, wire::refusal why, const std::string& detail);

  std::unique_ptr<impl> impl_;
  std::string endpoint_;
  bool encrypted_ = false;
  caf::actor inbox_;
  std::mutex mutex_;
  std::deque<outbound> queue_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> frames_in_{0};
  std::atomic<std::uint64_t> frames_out_{0};
  std::atomic<std::uint64_t> peers_{0};
  std::array<std::atomic<std::uint64_t>, 4> refused_{};
  std::thread thread_;
};

} // namespace cdui::actors
