#include "apps/http_guard.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "messages/json_text.hpp"
#include "messages/text.hpp"

namespace cdui::apps {

namespace {

using clock = read_deadline::clock;

/// How long a connection whose body was refused unread is kept for the client to read the answer
/// (the bytes it still sends are discarded): closed with unread bytes, the socket would send a
/// reset, which can make the client lose the answer.
constexpr auto refusal_linger = std::chrono::seconds(2);

std::string detail_json(const std::string& detail) {
  return json_text({{"detail", detail}});
}

/// `size` bytes as "16 MiB" when they are whole MiB, else as bytes.
std::string size_text(std::uint64_t size) {
  constexpr std::uint64_t mib = 1 << 20;
  return size % mib == 0 ? std::to_string(size / mib) + " MiB" : std::to_string(size) + " bytes";
}

/// The address (no port) and port of a socket's address, "" for a family other than IPv4 and IPv6.
std::pair<std::string, int> address_of(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
    return {text, ntohs(in.sin_port)};
  }
  if (addr.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    return {text, ntohs(in6.sin6_port)};
  }
  return {"", 0};
}

/// One end of `sock`: `end` is ::getpeername (the client) or ::getsockname (this server).
std::pair<std::string, int> end_of(socket_t sock, int (*end)(int, sockaddr*, socklen_t*)) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (end(sock, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return {"", 0};
  return address_of(addr);
}

/// Waits up to `timeout` for `events` on `sock`; true when they (or an error or hang-up, which the
/// next read or write reports) came.
bool wait_for(socket_t sock, short events, clock::duration timeout) {
  auto end = clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(end - clock::now());
    pollfd fd{sock, events, 0};
    auto n = ::poll(&fd, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
    if (n > 0)
      return true;
    if (n == 0 || errno != EINTR)
      return false;
  }
}

/// A connection's socket as httplib reads and writes it, with the deadline for reading a request.
/// The reads enforce the deadline themselves: a watchdog thread that shuts late sockets down would
/// race with their close (the descriptor may be another connection's by then); a read that bounds
/// its own wait cannot. Only a request is ever read (a handler reads nothing), so the deadline
/// needs no disarming while a handler runs.
class guarded_stream final : public httplib::Stream {
public:
  guarded_stream(socket_t sock, read_deadline deadline, clock::duration write_timeout)
    : sock_(sock), deadline_(deadline), write_timeout_(write_timeout) {}

  /// Waits up to `idle` for the first byte of the next request; false when none came.
  bool await_request(clock::duration idle) {
    return begin_ < end_ || wait_for(sock_, POLLIN, idle);
  }
  /// The next request starts now: its deadline runs from here.
  void start_request() { deadline_.start(clock::now()); }
  /// Whether a read failed: the deadline passed, the client went quiet or closed. The rest of what
  /// it sent cannot be read as a request, so its connection ends.
  [[nodiscard]] bool read_failed() const { return read_failed_; }
  /// The bytes httplib has read from this connection so far.
  [[nodiscard]] std::uint64_t delivered() const { return delivered_; }

  bool is_readable() const override {
    return begin_ < end_ || wait_for(sock_, POLLIN, deadline_.next_wait(clock::now()));
  }
  bool is_writable() const override { return wait_for(sock_, POLLOUT, write_timeout_); }

  ssize_t read(char* ptr, size_t size) override {
    if (begin_ == end_) {
      auto now = clock::now();
      if (deadline_.passed(now) || !wait_for(sock_, POLLIN, deadline_.next_wait(now))) {
        read_failed_ = true;
        return -1;
      }
      // A large read goes straight to the caller; small ones (httplib reads lines byte by byte)
      // come from the buffer.
      auto n = size >= buffer_.size() ? receive(ptr, size) : receive(buffer_.data(), buffer_.size());
      if (n <= 0 || size >= buffer_.size()) {
        read_failed_ = read_failed_ || n <= 0;
        delivered_ += n > 0 ? static_cast<std::uint64_t>(n) : 0;
        return n;
      }
      begin_ = 0;
      end_ = static_cast<std::size_t>(n);
    }
    auto n = std::min(size, end_ - begin_);
    std::memcpy(ptr, buffer_.data() + begin_, n);
    begin_ += n;
    delivered_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable())
      return -1;
    ssize_t n;
    do
      n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    std::tie(ip, port) = end_of(sock_, ::getpeername);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    std::tie(ip, port) = end_of(sock_, ::getsockname);
  }
  socket_t socket() const override { return sock_; }

private:
  ssize_t receive(char* ptr, std::size_t size) {
    ssize_t n;
    do
      n = ::recv(sock_, ptr, size, 0);
    while (n < 0 && errno == EINTR);
    return n;
  }

  socket_t sock_;
  read_deadline deadline_;
  clock::duration write_timeout_;
  std::array<char, 4096> buffer_{};
  std::size_t begin_ = 0;  // bytes of buffer_ not yet read: [begin_, end_)
  std::size_t end_ = 0;
  bool read_failed_ = false;
  std::uint64_t delivered_ = 0;
};

/// Reads and drops what the client still sends, for at most `linger`, then lets the caller close:
/// a socket closed with unread bytes sends a reset, which can make the client lose our answer.
void drain(socket_t sock, clock::duration linger) {
  ::shutdown(sock, SHUT_WR);
  auto end = clock::now() + linger;
  std::array<char, 16384> sink{};
  for (;;) {
    auto n = ::recv(sock, sink.data(), sink.size(), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
      return;  // the client closed, or the connection broke
    auto left = end - clock::now();
    if (left <= clock::duration::zero() || (n < 0 && !wait_for(sock, POLLIN, left)))
      return;
  }
}

/// Answers a connection over its address's cap with a 503 before reading anything, and closes it.
void refuse_connection(socket_t sock, const std::string& detail) {
  auto body = detail_json(detail);
  auto response = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                  "Content-Length: " + std::to_string(body.size())
                  + "\r\nConnection: close\r\nRetry-After: 1\r\n\r\n" + body;
  // Small enough for the socket's buffer: never waits on a client that does not read.
  (void)::send(sock, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  drain(sock, clock::duration::zero());  // the request, if it is there already
}

/// One connection that client_connections counted, forgotten when it ends, however it ends.
class counted_connection {
public:
  counted_connection(client_connections& connections, std::string address)
    : connections_(connections), address_(std::move(address)),
      counted_(connections_.try_open(address_)) {}
  ~counted_connection() {
    if (counted_)
      connections_.close(address_);
  }
  counted_connection(const counted_connection&) = delete;
  counted_connection& operator=(const counted_connection&) = delete;

  explicit operator bool() const { return counted_; }

private:
  client_connections& connections_;
  std::string address_;
  bool counted_;
};

/// Makes httplib read `req`'s body as cdui means it, or not at all: false when the body is refused
/// (the Expect: 100-continue handler then answers, from the headers).
bool prepare_body(httplib::Request& req, const http_limits& limits) {
  // cdui reads every body as JSON. httplib would parse a form body (curl -d's Content-Type) into
  // params instead, refusing one over 8 KiB with a 413, and a multipart one into files, leaving the
  // body empty. Dropped here, where the headers are read and the body is not yet, no route changes;
  // ContentReader routes would have to read every POST and DELETE body themselves.
  req.headers.erase("Content-Type");
  if (refuse_body(req.headers, limits).status != 0) {
    // httplib answers a request before reading its body in one place: the Expect: 100-continue
    // hook. The body stays unread, so the connection cannot carry another request.
    req.headers.erase("Expect");
    req.set_header("Expect", "100-continue");
    req.headers.erase("Connection");
    req.set_header("Connection", "close");
    return false;
  }
  // No length and no Transfer-Encoding: no body (RFC 9112 section 6.3). httplib would read until
  // the client closes, so a PUT or DELETE sent that way got no answer.
  if (!req.has_header("Content-Length"))
    req.set_header("Content-Length", "0");
  return true;
}

} // namespace

bool client_connections::try_open(const std::string& address) {
  std::lock_guard<std::mutex> lock{mutex_};
  auto& open = open_[address];
  if (open >= cap_) {
    if (open == 0)
      open_.erase(address);
    return false;
  }
  ++open;
  return true;
}

void client_connections::close(const std::string& address) {
  std::lock_guard<std::mutex> lock{mutex_};
  auto it = open_.find(address);
  if (it != open_.end() && --it->second == 0)
    open_.erase(it);
}

std::size_t client_connections::open(const std::string& address) const {
  std::lock_guard<std::mutex> lock{mutex_};
  auto it = open_.find(address);
  return it == open_.end() ? 0 : it->second;
}

read_deadline::clock::duration read_deadline::next_wait(clock::time_point now) const {
  if (passed(now))
    return clock::duration::zero();
  return std::min<clock::duration>(end_ - now, per_read_);
}

body_refusal refuse_body(const httplib::Headers& headers, const http_limits& limits) {
  if (headers.count("Transfer-Encoding") > 0)
    return {411, "send the body with a Content-Length: this server takes no Transfer-Encoding "
                 "(chunked) request bodies"};
  auto [first, last] = headers.equal_range("Content-Length");
  if (first == last)
    return {};
  if (std::next(first) != last)
    return {400, "the request has more than one Content-Length header"};
  const auto& text = first->second;
  // Digits only, at most 18 of them: no sign, no spaces, no overflow.
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    return {400, "the Content-Length " + text::quoted(text) + " is not a number of bytes"};
  auto length = std::stoull(text);
  if (length <= limits.max_body_bytes)
    return {};
  auto detail = "the body is " + std::to_string(length) + " bytes; this server takes at most "
                + size_text(limits.max_body_bytes);
  if (!limits.max_body_setting.empty())
    detail += " (" + limits.max_body_setting + ")";
  return {413, detail};
}

http_guard::http_guard(http_limits limits)
  : limits_(std::move(limits)), connections_(limits_.max_connections_per_client) {
  set_payload_max_length(limits_.max_body_bytes);
  // Answers the bodies prepare_body refused, and a client's own Expect: 100-continue.
  set_expect_100_continue_handler([this](const httplib::Request& req, httplib::Response& res) {
    auto refusal = refuse_body(req.headers, limits_);
    if (refusal.status == 0)
      return 100;
    res.status = refusal.status;
    res.set_content(detail_json(refusal.detail), "application/json");
    return refusal.status;
  });
}

bool http_guard::set_listen_backlog(int backlog) {
  return ::listen(svr_sock_, backlog) == 0;  // on a listening socket, changes its backlog
}

bool http_guard::listens_on_loopback() const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(svr_sock_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return false;
  if (addr.ss_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in&>(addr).sin_addr.s_addr) >> 24) == 127;
  if (addr.ss_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr);
  return false;
}

bool http_guard::process_and_close_socket(socket_t sock) {
  bool served = false;
  auto peer = end_of(sock, ::getpeername).first;
  try {
    if (counted_connection connection{connections_, peer})
      served = serve_connection(sock);
    else
      refuse_connection(sock, "this client (" + peer + ") has "
                                + std::to_string(connections_.cap()) + " connections open to the "
                                "server, the most it takes from one address"
                                + (limits_.max_connections_setting.empty()
                                     ? std::string{}
                                     : " (" + limits_.max_connections_setting + ")")
                                + "; retry when one has closed");
  } catch (const std::exception& e) {
    // A pool thread must not throw: the process would end. This connection alone is lost.
    spdlog::error("HTTP connection from {}: {}", peer, text::to_utf8(e.what()));
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return served;
}

bool http_guard::serve_connection(socket_t sock) {
  using std::chrono::microseconds;
  using std::chrono::seconds;
  guarded_stream strm{
    sock, read_deadline{limits_.read_deadline, seconds(read_timeout_sec_) + microseconds(read_timeout_usec_)},
    seconds(write_timeout_sec_) + microseconds(write_timeout_usec_)};
  bool ok = false;
  // httplib's own loop, with the deadline armed for each request and its body checked first.
  for (auto left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
    if (!strm.await_request(seconds(keep_alive_timeout_sec_)))
      break;
    strm.start_request();
    bool closed = false;
    bool parsed = false;  // its request line and headers were read
    bool body_refused = false;
    std::uint64_t body_start = 0;
    std::uint64_t body_length = 0;
    ok = process_request(strm, left == 1, closed, [&](httplib::Request& req) {
      parsed = true;
      body_refused = !prepare_body(req, limits_);
      body_start = strm.delivered();
      body_length = body_refused ? 0 : req.get_header_value<std::uint64_t>("Content-Length");
    });
    // A body left unread (refused, or a request answered before its body was read: a 403, a 400
    // about its path) is no request: the connection ends once the client has read the answer.
    if (body_refused || strm.delivered() - body_start < body_length) {
      drain(sock, refusal_linger);
      break;
    }
    // After a request that could not be read in full, what follows is no request either.
    if (!ok || closed || !parsed || strm.read_failed())
      break;
  }
  return ok;
}

} // namespace cdui::apps
