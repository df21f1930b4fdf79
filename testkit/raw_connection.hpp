#pragma once
// A raw TCP connection to a server on 127.0.0.1, for requests no HTTP client sends (bytes that
// are not UTF-8, bodies that never come, requests written as one stream), and the answers read
// back from it. Every wait is bounded by a timeout; a setup failure fails the test.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

namespace cdui::test {

/// An HTTP answer as a raw connection read it.
struct raw_reply {
  int status = 0;
  std::string headers;
  std::string body;
  [[nodiscard]] nlohmann::json detail() const {
    auto j = nlohmann::json::parse(body, nullptr, false);
    return j.is_object() ? j["detail"] : nlohmann::json(nullptr);
  }
};

/// A TCP connection to the server, from `source` (any 127.0.0.x: Linux routes 127/8 to lo), for
/// requests no HTTP client sends. Every wait is bounded by a timeout that fails the test.
class raw_connection {
public:
  raw_connection(int port, const char* source = "127.0.0.1") {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    BOOST_REQUIRE(fd_ >= 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &from.sin_addr);
    BOOST_REQUIRE_MESSAGE(::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) == 0,
                          "cannot bind " << source);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    BOOST_REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
  }
  ~raw_connection() { ::close(fd_); }
  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;

  /// Sends `bytes`; false when the server has closed the connection.
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }

  [[nodiscard]] int fd() const { return fd_; }

  /// Whether bytes (or the end of the connection) arrive within `timeout`.
  bool readable(std::chrono::milliseconds timeout) {
    if (!received_.empty() || closed_)
      return true;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
  }

  /// One answer: its status line, headers and Content-Length body; nullopt when it is not all
  /// there within `timeout` (the server is silent or closed first).
  std::optional<raw_reply> reply(std::chrono::milliseconds timeout = std::chrono::seconds{10}) {
    auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto head_end = received_.find("\r\n\r\n"); head_end != std::string::npos) {
        raw_reply r;
        r.headers = received_.substr(0, head_end + 4);
        r.status = std::stoi(r.headers.substr(9, 3));
        std::size_t length = 0;
        if (auto at = lower(r.headers).find("content-length:"); at != std::string::npos)
          length = std::stoul(r.headers.substr(at + 15));
        if (received_.size() >= head_end + 4 + length) {
          r.body = received_.substr(head_end + 4, length);
          received_.erase(0, head_end + 4 + length);
          return r;
        }
      }
      if (!receive_some(end))
        return std::nullopt;
    }
  }

  /// Reads until the server closes the connection; false when it has not within `timeout`.
  bool closed_by_server(std::chrono::milliseconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (!closed_)
      if (!receive_some(end))
        return closed_;
    return true;
  }

private:
  static std::string lower(std::string s) {
    for (auto& c : s)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  /// Waits until `end` for bytes; false when none came (or the connection ended).
  bool receive_some(std::chrono::steady_clock::time_point end) {
    if (closed_)
      return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0)
      return false;
    char buf[65536];
    auto n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      closed_ = true;  // the end, or a reset: the server closed it either way
      return false;
    }
    received_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string received_;
  bool closed_ = false;
};

} // namespace cdui::test
