#include "actors/server/zmq_bridge.hpp"

#include <stdexcept>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/log_limit.hpp"
#include "messages/atoms.hpp"
#include "messages/worker.hpp"

namespace cdui::actors {

namespace {

/// libzmq's own limit: a peer that sends more in one frame is disconnected before we see it.
/// Above the wire's limit, so that a frame a little too large is still counted as too_large.
constexpr std::int64_t socket_max_message_bytes = 4 * static_cast<std::int64_t>(wire::max_frame_bytes);

/// Printable form of a routing id (ZeroMQ's are 5 binary bytes unless the peer sets one).
std::string printable(const std::string& identity) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : identity) {
    out += hex[c >> 4];
    out += hex[c & 0xf];
  }
  return out;
}

/// Decodes the payload as T and hands it to the inbox; false (the reason in `why`) when it does
/// not decode.
template <class T>
bool forward(const worker_registry_actor& inbox, const std::string& identity, std::string_view payload,
             std::string& why) {
  auto x = wire::decode<T>(payload, &why);
  if (!x)
    return false;
  caf::anon_send(inbox, atoms::wire_in::value, identity, std::move(*x));
  return true;
}

} // namespace

zmq_bridge::zmq_bridge(const std::string& endpoint, const std::string& curve_secret_key)
  : encrypted_(!curve_secret_key.empty()) {
  zmq_socket_setup setup;
  setup.type = zmq_socket_setup::role::router;
  setup.name = "zmq bridge";
  setup.bind = endpoint;
  setup.max_message_bytes = socket_max_message_bytes;
  setup.curve_server_secret_key = curve_secret_key;
  try {
    socket_ = std::make_unique<zmq_socket_thread>(setup);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot listen for agents on " + endpoint + ": " + e.what());
  }
  endpoint_ = socket_->endpoint();
}

zmq_bridge::~zmq_bridge() = default;

void zmq_bridge::start(worker_registry_actor inbox) {
  inbox_ = std::move(inbox);
  socket_->start([this](const zmq_socket_thread::frames& parts) { receive(parts); });
}

void zmq_bridge::send(const std::string& identity, wire::message_type type, std::string payload) {
  auto head = wire::encode_envelope({wire::protocol_version, type, 0, "server"});
  socket_->send({identity, std::move(head), std::move(payload)}, [this](bool sent) {
    if (sent)
      ++frames_out_;
  });
}

bridge_stats zmq_bridge::stats() const {
  bridge_stats s;
  s.endpoint = endpoint_;
  s.encrypted = encrypted_;
  s.frames_in = frames_in_.load();
  s.frames_out = frames_out_.load();
  s.peers = peers_.load();
  for (std::size_t i = 0; i < s.refused.size(); ++i)
    s.refused[i] = refused_[i].load();
  return s;
}

void zmq_bridge::refuse(const std::string& identity, wire::refusal why, const std::string& detail) {
  auto n = ++refused_[static_cast<std::size_t>(why)];
  if (worth_logging(n))
    spdlog::warn("zmq bridge: refused a message from peer {} ({}, {} so far): {}",
                 printable(identity), wire::to_string(why), n, detail);
}

void zmq_bridge::receive(const zmq_socket_thread::frames& parts) {
  ++frames_in_;
  std::string identity = parts.empty() ? std::string{} : std::string{parts[0]};
  if (parts.size() != 3) {
    refuse(identity, wire::refusal::malformed,
           std::to_string(parts.size() - 1) + " frames after the identity, not 2 (envelope, payload)");
    return;
  }
  if (parts[2].size() > wire::max_frame_bytes) {
    refuse(identity, wire::refusal::too_large,
           "a payload of " + std::to_string(parts[2].size()) + " bytes (at most "
             + std::to_string(wire::max_frame_bytes) + ")");
    return;
  }
  auto envelope = wire::decode_envelope(parts[1]);
  if (auto* why = std::get_if<wire::refusal>(&envelope)) {
    refuse(identity, *why, "the envelope");
    return;
  }
  auto type = std::get<wire::envelope>(envelope).type;
  auto payload = parts[2];
  bool ok = false;
  std::string why;
  switch (type) {
  case wire::message_type::hello: ok = forward<hello>(inbox_, identity, payload, why); break;
  case wire::message_type::heartbeat: ok = forward<heartbeat>(inbox_, identity, payload, why); break;
  case wire::message_type::run_update: ok = forward<run_update>(inbox_, identity, payload, why); break;
  case wire::message_type::run_done: ok = forward<run_done>(inbox_, identity, payload, why); break;
  case wire::message_type::outputs_reply:
    ok = forward<outputs_reply>(inbox_, identity, payload, why);
    break;
  case wire::message_type::goodbye: ok = forward<goodbye>(inbox_, identity, payload, why); break;
  default:
    refuse(identity, wire::refusal::unknown_type,
           std::string{"a message of type "} + wire::to_string(type) + ", which only the server sends");
    return;
  }
  if (!ok) {
    auto detail = std::string{"a payload that is not a "} + wire::to_string(type) + " (" + why + ")";
    refuse(identity, wire::refusal::malformed, detail);
    // A peer that is not yet a worker hears why its hello was not read; the registry never sees it.
    if (type == wire::message_type::hello)
      send(identity, wire::message_type::refused,
           wire::encode(refused{"the server could not read this hello: " + detail}));
    return;
  }
  if (peers_seen_.insert(identity).second)
    peers_ = peers_seen_.size();
}

} // namespace cdui::actors
