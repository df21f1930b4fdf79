#pragma once
// A peer of the server's ROUTER socket made by hand: a DEALER that speaks messages/wire.hpp (or
// garbles it), for tests that play an agent and benchmarks that play many.

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "messages/version.hpp"
#include "messages/wire.hpp"
#include "messages/worker.hpp"

namespace cdui::test {

/// The two frames of a message: its envelope, then its payload.
template <class T>
std::vector<std::string> wire_frames(wire::message_type type, const T& payload,
                                     std::uint16_t version = wire::protocol_version) {
  return {wire::encode_envelope({version, type, 0, "test"}), wire::encode(payload)};
}

/// Sends `frames` as one message; false when the socket would block and `flags` say not to wait.
inline bool send_frames(zmq::socket_t& socket, const std::vector<std::string>& frames,
                        zmq::send_flags flags = zmq::send_flags::none) {
  std::vector<zmq::const_buffer> buffers;
  for (const auto& f : frames)
    buffers.push_back(zmq::buffer(f));
  return zmq::send_multipart(socket, buffers, flags).has_value();
}

/// The next message's type and payload, or nullopt when none came within `timeout` (0: only one
/// already waiting). Throws on a message that is not two frames with an envelope that decodes.
inline std::optional<std::pair<wire::message_type, std::string>>
receive_message(zmq::socket_t& socket, std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0}};
  if (zmq::poll(items, 1, timeout) == 0)
    return std::nullopt;
  std::vector<zmq::message_t> parts;
  if (!zmq::recv_multipart(socket, std::back_inserter(parts), zmq::recv_flags::dontwait))
    return std::nullopt;
  if (parts.size() != 2)
    throw std::runtime_error("a message of " + std::to_string(parts.size()) + " frames from the server");
  auto e = wire::decode_envelope(parts[0].to_string_view());
  if (!std::holds_alternative<wire::envelope>(e))
    throw std::runtime_error("an envelope from the server that does not decode");
  return std::make_pair(std::get<wire::envelope>(e).type, parts[1].to_string());
}

/// One DEALER socket connected to the server's ROUTER at `endpoint`; it sends what it is told,
/// valid or not. Several peers may share one context (a benchmark's hundreds of agents).
class raw_peer {
public:
  /// With `server_key` (Z85) it is a CURVE client of a server that encrypts its wire.
  explicit raw_peer(const std::string& endpoint, const std::string& server_key = "")
    : own_context_(std::make_unique<zmq::context_t>(1)), socket_{*own_context_, zmq::socket_type::dealer} {
    connect(endpoint, server_key);
  }
  raw_peer(zmq::context_t& context, const std::string& endpoint)
    : socket_{context, zmq::socket_type::dealer} {
    connect(endpoint, "");
  }

  /// Sends the frames as they are; false when `flags` say not to wait and the queue is full.
  bool send(const std::vector<std::string>& frames, zmq::send_flags flags = zmq::send_flags::none) {
    return send_frames(socket_, frames, flags);
  }
  template <class T>
  void send(wire::message_type type, const T& payload, std::uint16_t version = wire::protocol_version) {
    if (!send(wire_frames(type, payload, version)))
      throw std::runtime_error(std::string{"could not send a "} + wire::to_string(type));
  }
  /// The next message's type and payload, or nullopt after `timeout`.
  std::optional<std::pair<wire::message_type, std::string>>
  receive(std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
    return receive_message(socket_, timeout);
  }

  [[nodiscard]] zmq::socket_t& socket() { return socket_; }

private:
  void connect(const std::string& endpoint, const std::string& server_key) {
    socket_.set(zmq::sockopt::linger, 0);
    if (!server_key.empty()) {
      char pub[41], sec[41];
      zmq_curve_keypair(pub, sec);
      socket_.set(zmq::sockopt::curve_serverkey, server_key);
      socket_.set(zmq::sockopt::curve_publickey, std::string{pub});
      socket_.set(zmq::sockopt::curve_secretkey, std::string{sec});
    }
    socket_.connect(endpoint);
  }

  std::unique_ptr<zmq::context_t> own_context_;  // before socket_: destroyed after it
  zmq::socket_t socket_;
};

/// A hello that this cdui accepts from `name` with `credential` (the session token on the same
/// host), offering `devices`. An agent whose node types differ from the server's
/// (`node_types_digest`) joins Degraded.
inline hello make_hello(const std::string& name, const std::string& credential,
                        std::vector<device_offer> devices, const std::string& node_types_digest = "",
                        const std::string& env_digest = "") {
  hello h;
  h.name = name;
  h.version = cdui::version();
  h.env_digest = env_digest;
  h.node_types_digest = node_types_digest;
  h.credential = credential;
  h.devices = std::move(devices);
  return h;
}

} // namespace cdui::test
