#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

#include <httplib.h>

namespace cdui::apps {

/// The most bytes of a request body the server takes unless told otherwise: a graph is a few KB,
/// so 16 MiB leaves room for any graph while no client can make the server hold gigabytes.
inline constexpr std::size_t default_max_body_bytes = std::size_t{16} << 20;
/// How long a client may take to send one request, its headers and its body, in all.
inline constexpr std::chrono::seconds default_read_deadline{10};
/// Connections one client address may hold open at once.
inline constexpr std::size_t default_max_connections_per_client = 32;

/// What http_guard allows each client (docs/http-api.md#limits).
struct http_limits {
  std::size_t max_body_bytes = default_max_body_bytes;
  std::chrono::milliseconds read_deadline = default_read_deadline;
  std::size_t max_connections_per_client = default_max_connections_per_client;
  /// How an operator changes max_body_bytes, for the 413 that names it.
  std::string max_body_setting;
  /// How an operator changes max_connections_per_client, for the 503 that names it.
  std::string max_connections_setting;
};

/// The connections each client address has open, at most `cap` each. Thread-safe.
class client_connections {
public:
  explicit client_connections(std::size_t cap) : cap_(cap) {}

  /// Counts a new connection from `address`; false (and nothing counted) when it has `cap` open.
  [[nodiscard]] bool try_open(const std::string& address);
  /// Forgets one connection of `address` that try_open counted.
  void close(const std::string& address);
  [[nodiscard]] std::size_t open(const std::string& address) const;
  [[nodiscard]] std::size_t cap() const { return cap_; }

private:
  std::size_t cap_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::size_t> open_;  // addresses with none are erased
};

/// The deadline for reading one request: `budget` from its first byte for all of it, each read
/// waiting at most `per_read` of what is left. A client that trickles bytes cannot extend it.
class read_deadline {
public:
  using clock = std::chrono::steady_clock;

  read_deadline(clock::duration budget, clock::duration per_read)
    : budget_(budget), per_read_(per_read) {}

  /// A request's first byte has arrived at `now`.
  void start(clock::time_point now) { end_ = now + budget_; }
  /// How long the next read may wait for bytes: zero once the deadline has passed.
  [[nodiscard]] clock::duration next_wait(clock::time_point now) const;
  [[nodiscard]] bool passed(clock::time_point now) const { return now >= end_; }

private:
  clock::duration budget_;
  clock::duration per_read_;
  clock::time_point end_ = clock::time_point::max();
};

/// Why a request's body is refused from its headers alone, before a byte of it is read.
struct body_refusal {
  int status = 0;  // 0: the body is read
  std::string detail;
};

/// Decides from `headers` whether a request's body is read: a Content-Length up to `max_bytes`, or
/// no length at all (no body, RFC 9112 section 6.3), is; an unreadable or larger Content-Length, or a
/// Transfer-Encoding (chunked bodies have no length to check first), is refused.
[[nodiscard]] body_refusal refuse_body(const httplib::Headers& headers, const http_limits& limits);

/// cpp-httplib's server with cdui's limits on what one client may hold: at most
/// `max_connections_per_client` connections per address (more get 503 and are closed), a deadline
/// for reading each request (a connection that misses it is closed), and a body limit checked
/// against Content-Length before the body is read (413). Every body is read as it comes, whatever
/// its Content-Type. Its refusals are JSON {"detail": "..."} like the API's.
class http_guard : public httplib::Server {
public:
  explicit http_guard(http_limits limits);

  /// Lets the kernel hold `backlog` connections waiting to be accepted; call after bind_to_port.
  /// cpp-httplib listens with 5: a burst of connections beyond that waits for the clients' SYN
  /// retries, a second and more each.
  bool set_listen_backlog(int backlog);

  /// Whether the listening socket is bound to a loopback address only (127.0.0.0/8 or ::1).
  [[nodiscard]] bool listens_on_loopback() const;

  [[nodiscard]] const http_limits& limits() const { return limits_; }

private:
  // httplib calls it on a pool thread for each accepted connection (SSLServer overrides it too).
  bool process_and_close_socket(socket_t sock) override;
  bool serve_connection(socket_t sock);

  http_limits limits_;
  client_connections connections_;
};

} // namespace cdui::apps
