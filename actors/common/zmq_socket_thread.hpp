#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace cdui::actors {

/// How a zmq_socket_thread's socket is made: its type, its options and where it binds or
/// connects. Plain data, so that no user of the helper includes ZeroMQ's headers.
struct zmq_socket_setup {
  enum class role { router, dealer };
  role type = role::dealer;
  /// For the log: "zmq bridge", "agent 'w1'".
  std::string name;
  /// Binds here (tcp://127.0.0.1:0 picks a free port), or else connects to `connect`.
  std::string bind;
  std::string connect;
  /// libzmq's maxmsgsize: a peer that sends a larger frame is disconnected. 0: no limit set.
  std::int64_t max_message_bytes = 0;
  /// ZMQ_IMMEDIATE: nothing queues for a peer whose connection is not complete.
  bool immediate = false;
  /// A CURVE server with this secret key (Z85).
  std::string curve_server_secret_key;
  /// A CURVE client of the server with this public key (Z85), with its own pair.
  std::string curve_server_key;
  std::string curve_public_key;
  std::string curve_secret_key;
};

/// A ZeroMQ socket on a thread of its own, never a CAF scheduler thread (docs/architecture.md,
/// "The wire"): the server's ROUTER (zmq_bridge) and each agent's DEALER. The thread hands each
/// incoming message (its frames) to a handler, which turns it into an actor message, and sends what
/// send() queued. Each wake-up sends the whole outbound queue first, then receives at most 256
/// messages, so a flood of input never starves the answers. Linger is 0: what is queued when it is
/// destroyed is dropped.
class zmq_socket_thread {
public:
  /// The frames of one incoming message; valid only during the handler's call.
  using frames = std::vector<std::string_view>;
  using handler = std::function<void(const frames&)>;
  /// Told, on the socket's thread, whether a message was handed to the socket (false: the peer is
  /// not connected, or its queue is full).
  using sent_handler = std::function<void(bool)>;

  /// Makes the socket, sets its options and binds or connects it before it returns; throws
  /// std::runtime_error with libzmq's reason when it cannot. Nothing is received before start().
  explicit zmq_socket_thread(const zmq_socket_setup& setup);
  /// Stops the thread and joins it.
  ~zmq_socket_thread();
  zmq_socket_thread(const zmq_socket_thread&) = delete;
  zmq_socket_thread& operator=(const zmq_socket_thread&) = delete;

  /// Starts the thread: from now on every incoming message goes to `on_message`, on that thread.
  /// Call once.
  void start(handler on_message);

  /// Queues a message and wakes the thread, which sends it without blocking. Thread-safe, also
  /// from the handler.
  void send(std::vector<std::string> message, sent_handler sent = {});

  /// The bound endpoint with its real port (zmq's last_endpoint); empty for a connecting socket.
  [[nodiscard]] const std::string& endpoint() const { return endpoint_; }

private:
  struct outbound {
    std::vector<std::string> frames;
    sent_handler sent;
  };
  struct impl;

  void loop();
  void send_queued();
  void receive_one();

  std::unique_ptr<impl> impl_;
  std::string name_;
  std::string endpoint_;
  handler on_message_;
  std::mutex mutex_;
  std::deque<outbound> queue_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

} // namespace cdui::actors
