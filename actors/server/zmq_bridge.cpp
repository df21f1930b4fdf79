#include "actors/server/zmq_bridge.hpp"

#include <unordered_set>
#include <vector>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "actors/common/log_limit.hpp"
#include "messages/atoms.hpp"
#include "messages/worker.hpp"

namespace cdui::actors {

namespace {

/// libzmq's own limit: a peer that sends more in one frame is disconnected before we see it.
/// Above the wire's limit, so that a frame a little too large is still counted as too_large.
constexpr std::int64_t socket_max_message_bytes = 4 * static_cast<std::int64_t>(wire::max_frame_bytes);

/// The first refusals of each kind are logged one by one, then every thousandth: a stream of
/// garbage must not flood the log.

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
bool forward(const caf::actor& inbox, const std::string& identity, std::string_view payload,
             std::string& why) {
  auto x = wire::decode<T>(payload, &why);
  if (!x)
    return false;
  caf::anon_send(inbox, atoms::wire_in::value, identity, std::move(*x));
  return true;
}

} // namespace


struct zmq_bridge::impl {
  zmq::context_t context{1};
  zmq::socket_t router{context, zmq::socket_type::router};
  zmq::socket_t wake_in{context, zmq::socket_type::pair};
  zmq::socket_t wake_out{context, zmq::socket_type::pair};
  std::unordered_set<std::string> peers;
};

zmq_bridge::zmq_bridge(const std::string& endpoint, const std::string& curve_secret_key)
  : impl_(std::make_unique<impl>()) {
  auto& router = impl_->router;
  router.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::maxmsgsize, socket_max_message_bytes);
  if (!curve_secret_key.empty()) {
    router.set(zmq::sockopt::curve_server, 1);
    router.set(zmq::sockopt::curve_secretkey, curve_secret_key);
    encrypted_ = true;
  }
  try {
    router.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot listen for agents on " + endpoint + ": " + e.what());
  }
  endpoint_ = router.get(zmq::sockopt::last_endpoint);
  auto wake = "inproc://cdui-bridge-wake-" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
  impl_->wake_in.bind(wake);
  impl_->wake_out.connect(wake);
}

void zmq_bridge::start(caf::actor inbox) {
  inbox_ = std::move(inbox);
  thread_ = std::thread([this] { loop(); });
}

zmq_bridge::~zmq_bridge() {
  stop_ = true;
  {
    std::lock_guard lock{mutex_};
    impl_->wake_out.send(zmq::const_buffer{"", 0}, zmq::send_flags::dontwait);
  }
  if (thread_.joinable())
    thread_.join();
}

void zmq_bridge::send(const std::string& identity, wire::message_type type, std::string payload) {
  std::lock_guard lock{mutex_};
  bool was_empty = queue_.empty();
  queue_.push_back({identity, type, std::move(payload)});
  // One wake-up per batch: the thread drains the whole queue when it wakes.
  if (was_empty)
    impl_->wake_out.send(zmq::const_buffer{"", 0}, zmq::send_flags::dontwait);
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

void zmq_bridge::receive_one() {
  std::vector<zmq::message_t> parts;
  if (!zmq::recv_multipart(impl_->router, std::back_inserter(parts), zmq::recv_flags::dontwait))
    return;
  ++frames_in_;
  std::string identity = parts.empty() ? std::string{} : parts[0].to_string();
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
  auto envelope = wire::decode_envelope(parts[1].to_string_view());
  if (auto* why = std::get_if<wire::refusal>(&envelope)) {
    refuse(identity, *why, "the envelope");
    return;
  }
  auto type = std::get<wire::envelope>(envelope).type;
  auto payload = parts[2].to_string_view();
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
  if (impl_->peers.insert(identity).second)
    peers_ = impl_->peers.size();
}

void zmq_bridge::loop() {
  auto& router = impl_->router;
  while (!stop_) {
    zmq::pollitem_t items[] = {{router.handle(), 0, ZMQ_POLLIN, 0},
                               {impl_->wake_in.handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(-1));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR)
        continue;
      spdlog::error("zmq bridge: poll failed: {}", e.what());
      return;
    }
    if (items[1].revents & ZMQ_POLLIN) {
      zmq::message_t drained;
      while (impl_->wake_in.recv(drained, zmq::recv_flags::dontwait)) {
      }
      std::deque<outbound> batch;
      {
        std::lock_guard lock{mutex_};
        batch.swap(queue_);
      }
      for (auto& m : batch) {
        wire::envelope e{wire::protocol_version, m.type, 0, "server"};
        auto head = wire::encode_envelope(e);
        std::array<zmq::const_buffer, 3> frames{zmq::buffer(m.identity), zmq::buffer(head),
                                                zmq::buffer(m.payload)};
        // A peer that is gone is not an error here: ROUTER drops what it cannot route.
        if (zmq::send_multipart(router, frames, zmq::send_flags::dontwait))
          ++frames_out_;
      }
    }
    // A bounded batch per wake-up, so outbound messages are never starved by a flood.
    for (int i = 0; i < 256 && (items[0].revents & ZMQ_POLLIN); ++i) {
      if (!(router.get(zmq::sockopt::events) & ZMQ_POLLIN))
        break;
      receive_one();
    }
  }
}

} // namespace cdui::actors
