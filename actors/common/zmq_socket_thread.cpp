#include "actors/common/zmq_socket_thread.hpp"

#include <stdexcept>

#include <spdlog/spdlog.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace cdui::actors {

namespace {

/// At most this many incoming messages per wake-up, so that queued answers go out in between.
constexpr int max_received_per_wakeup = 256;

} // namespace

struct zmq_socket_thread::impl {
  zmq::context_t context{1};
  zmq::socket_t socket;
  zmq::socket_t wake_in{context, zmq::socket_type::pair};
  zmq::socket_t wake_out{context, zmq::socket_type::pair};

  explicit impl(zmq_socket_setup::role type)
    : socket(context, type == zmq_socket_setup::role::router ? zmq::socket_type::router
                                                            : zmq::socket_type::dealer) {}
};

zmq_socket_thread::zmq_socket_thread(const zmq_socket_setup& setup)
  : impl_(std::make_unique<impl>(setup.type)), name_(setup.name) {
  auto& socket = impl_->socket;
  try {
    socket.set(zmq::sockopt::linger, 0);
    if (setup.max_message_bytes > 0)
      socket.set(zmq::sockopt::maxmsgsize, setup.max_message_bytes);
    if (setup.immediate)
      socket.set(zmq::sockopt::immediate, 1);
    if (!setup.curve_server_secret_key.empty()) {
      socket.set(zmq::sockopt::curve_server, 1);
      socket.set(zmq::sockopt::curve_secretkey, setup.curve_server_secret_key);
    }
    if (!setup.curve_server_key.empty()) {
      socket.set(zmq::sockopt::curve_serverkey, setup.curve_server_key);
      socket.set(zmq::sockopt::curve_publickey, setup.curve_public_key);
      socket.set(zmq::sockopt::curve_secretkey, setup.curve_secret_key);
    }
    if (!setup.bind.empty()) {
      socket.bind(setup.bind);
      endpoint_ = socket.get(zmq::sockopt::last_endpoint);
    } else {
      socket.connect(setup.connect);
    }
  } catch (const zmq::error_t& e) {
    throw std::runtime_error(e.what());
  }
  auto wake = "inproc://cdui-socket-wake-" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
  impl_->wake_in.bind(wake);
  impl_->wake_out.connect(wake);
}

zmq_socket_thread::~zmq_socket_thread() {
  stop_ = true;
  {
    std::lock_guard lock{mutex_};
    impl_->wake_out.send(zmq::const_buffer{"", 0}, zmq::send_flags::dontwait);
  }
  if (thread_.joinable())
    thread_.join();
}

void zmq_socket_thread::start(handler on_message) {
  on_message_ = std::move(on_message);
  thread_ = std::thread([this] { loop(); });
}

void zmq_socket_thread::send(std::vector<std::string> message, sent_handler sent) {
  std::lock_guard lock{mutex_};
  bool was_empty = queue_.empty();
  queue_.push_back({std::move(message), std::move(sent)});
  // One wake-up per batch: the thread sends the whole queue when it wakes.
  if (was_empty)
    impl_->wake_out.send(zmq::const_buffer{"", 0}, zmq::send_flags::dontwait);
}

void zmq_socket_thread::send_queued() {
  zmq::message_t drained;
  while (impl_->wake_in.recv(drained, zmq::recv_flags::dontwait)) {
  }
  std::deque<outbound> batch;
  {
    std::lock_guard lock{mutex_};
    batch.swap(queue_);
  }
  for (auto& m : batch) {
    std::vector<zmq::const_buffer> frames;
    frames.reserve(m.frames.size());
    for (const auto& f : m.frames)
      frames.push_back(zmq::buffer(f));
    bool sent = false;
    try {
      // A ROUTER drops, unseen, what it cannot route; a DEALER refuses what it cannot queue.
      sent = zmq::send_multipart(impl_->socket, frames, zmq::send_flags::dontwait).has_value();
    } catch (const zmq::error_t&) {
      sent = false;
    }
    if (m.sent)
      m.sent(sent);
  }
}

void zmq_socket_thread::receive_one() {
  std::vector<zmq::message_t> parts;
  if (!zmq::recv_multipart(impl_->socket, std::back_inserter(parts), zmq::recv_flags::dontwait))
    return;
  frames views;
  views.reserve(parts.size());
  for (const auto& p : parts)
    views.push_back(p.to_string_view());
  on_message_(views);
}

void zmq_socket_thread::loop() {
  auto& socket = impl_->socket;
  while (!stop_) {
    zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0},
                               {impl_->wake_in.handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(-1));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR)
        continue;
      spdlog::error("{}: poll failed: {}", name_, e.what());
      return;
    }
    if (stop_)
      return;
    if (items[1].revents & ZMQ_POLLIN)
      send_queued();
    for (int i = 0; i < max_received_per_wakeup && (items[0].revents & ZMQ_POLLIN); ++i) {
      if (!(socket.get(zmq::sockopt::events) & ZMQ_POLLIN))
        break;
      receive_one();
    }
  }
}

} // namespace cdui::actors
