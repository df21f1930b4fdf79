// libFuzzer target: the HTTP API's request handlers (apps/http_api.hpp) on an embedded
// cdui::server, served by the same transport as `cdui start` (apps/http_guard.hpp) on 127.0.0.1
// at a free port. Each input becomes one request on a new loopback connection: either raw bytes
// as they are, or a request built from the input (method, token or not, path, query and body,
// the path and query percent-encoded so that any bytes reach the handlers). The reply is read
// with a deadline. The process must not crash or leak, every reply must be HTTP, and the server
// must still answer GET /api/health every `check_every` inputs. Nothing but loopback is used.
//
// Input: byte 0 = flags (bits 0-1: 0 raw, else built; bit 2: send the token; bits 3-5: the
// method), then for a built request "PATH\nQUERY\nBODY" (the body is the rest, newlines and all).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include <httplib.h>

#include "actors/server/server.hpp"
#include "apps/http_api.hpp"
#include "apps/http_guard.hpp"

namespace {

constexpr const char* token = "fuzz-session-token";
/// How often the harness checks that the server still answers, cancels runs an input started and
/// deletes ended runs (so that the home stays small).
constexpr std::uint64_t check_every = 200;
/// How long a reply may take before the harness gives up on it; a long-poll may hold it this long.
constexpr int reply_timeout_ms = 2000;

struct harness {
  std::filesystem::path home;
  std::unique_ptr<cdui::server> runtime;
  std::unique_ptr<cdui::apps::http_guard> http;
  std::thread listener;
  int port = 0;
  std::uint64_t inputs = 0;
  std::uint64_t server_errors = 0;

  ~harness() {
    http->stop();
    if (listener.joinable())
      listener.join();
    runtime.reset();
    std::error_code ignored;
    std::filesystem::remove_all(home, ignored);
  }
};

harness* the_harness = nullptr;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "http_fuzz: %s\n", what.c_str());
  std::abort();
}

/// connect() that goes on when a signal interrupts it (libFuzzer's timer, SIGALRM, every second):
/// the connection then completes in the background, and poll() waits for it.
bool connected(int fd, const sockaddr_in& addr) {
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0)
    return true;
  if (errno != EINTR && errno != EINPROGRESS)
    return false;
  pollfd p{fd, POLLOUT, 0};
  int ready = 0;
  while ((ready = ::poll(&p, 1, reply_timeout_ms)) < 0 && errno == EINTR) {
  }
  if (ready <= 0)
    return errno = ETIMEDOUT, false;
  int error = 0;
  socklen_t length = sizeof error;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
  return error == 0 || (errno = error, false);
}

/// Sends `request` to the server on a new loopback connection and returns what came back until
/// the server closed the connection or the deadline passed.
std::string exchange(std::string_view request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    fail("socket() failed");
  timeval tv{reply_timeout_ms / 1000, (reply_timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(the_harness->port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (!connected(fd, addr)) {
    auto error = errno;
    ::close(fd);
    fail(std::string{"cannot connect to the server on 127.0.0.1: "} + std::strerror(error));
  }
  std::size_t sent = 0;
  while (sent < request.size()) {
    auto n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;  // the server may close early (a refused body): what it answered still counts
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);  // the request is complete: a server waiting for more sees its end
  std::string reply;
  std::array<char, 8192> buf;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{reply_timeout_ms};
  while (std::chrono::steady_clock::now() < deadline) {
    auto n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    reply.append(buf.data(), static_cast<std::size_t>(n));
  }
  // Closed with a reset, not a FIN: neither side keeps the connection in TIME_WAIT, which at a
  // thousand connections a second would use up the loopback's ephemeral ports within a minute.
  linger reset{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  ::close(fd);
  return reply;
}

std::string percent_encoded(std::string_view bytes, std::string_view keep) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~'
        || keep.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string built_request(std::uint8_t flags, std::string_view rest) {
  static constexpr std::array<const char*, 8> methods{"GET", "POST", "DELETE", "GET",
                                                      "POST", "PUT", "HEAD", "OPTIONS"};
  auto line_end = rest.find('\n');
  auto path = rest.substr(0, line_end);
  rest = line_end == std::string_view::npos ? std::string_view{} : rest.substr(line_end + 1);
  line_end = rest.find('\n');
  auto query = rest.substr(0, line_end);
  auto body = line_end == std::string_view::npos ? std::string_view{} : rest.substr(line_end + 1);

  std::string target = percent_encoded(path, "/");
  if (target.empty() || target[0] != '/')
    target.insert(0, "/");
  if (!query.empty())
    target += "?" + percent_encoded(query, "=&");
  std::string request = std::string{methods[(flags >> 3) & 7]} + " " + target + " HTTP/1.1\r\n";
  request += "Host: 127.0.0.1\r\nConnection: close\r\n";
  if (flags & 4)
    request += std::string{cdui::apps::token_header} + ": " + token + "\r\n";
  if (!body.empty())
    request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size())
               + "\r\n";
  request += "\r\n";
  request += body;
  return request;
}

/// The status of an HTTP reply, or 0 when it is not one.
int status_of(const std::string& reply) {
  if (reply.size() < 12 || reply.compare(0, 7, "HTTP/1.") != 0)
    return 0;
  return std::atoi(reply.c_str() + 9);
}

void check_server(harness& h) {
  auto reply = exchange("GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  if (status_of(reply) != 200)
    fail("GET /api/health after " + std::to_string(h.inputs) + " inputs: "
         + (reply.empty() ? std::string{"no answer"} : reply.substr(0, 200)));
  // Runs an input submitted would otherwise hold the CPU's slots and fill the home.
  for (const auto& run : h.runtime->runs()) {
    if (!cdui::is_final(run.status))
      h.runtime->cancel(run.id);
    else
      (void)h.runtime->erase(run.id);
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::signal(SIGPIPE, SIG_IGN);
  auto* h = new harness;
  h->home = std::filesystem::temp_directory_path() / ("cdui-http-fuzz-" + std::to_string(::getpid()));
  std::filesystem::create_directories(h->home);
  ::setenv("CODEFYUI_HOME", h->home.c_str(), 1);
  cdui::server::config cfg;
  cfg.home = h->home;
  cfg.scheduler_threads = 2;
  cfg.sim_devices = "1GiB";
  cfg.token = token;
  h->runtime = std::make_unique<cdui::server>(cfg);
  h->http = std::make_unique<cdui::apps::http_guard>(cdui::apps::http_limits{});
  h->http->new_task_queue = [] { return new httplib::ThreadPool(8); };
  h->http->set_tcp_nodelay(true);
  cdui::apps::http_api_options api;
  api.token = token;
  api.max_waiting_polls = 4;
  cdui::apps::mount_http_api(*h->http, *h->runtime, api);
  h->port = h->http->bind_to_any_port("127.0.0.1");
  if (h->port <= 0)
    fail("cannot bind 127.0.0.1");
  h->listener = std::thread{[h] { h->http->listen_after_bind(); }};
  while (!h->http->is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  the_harness = h;
  check_server(*h);
  // The server goes when the main thread's thread_local objects do, on exit(), before CAF's own
  // (made earlier on this thread, so destroyed later): destroyed from an atexit handler instead,
  // ~actor_system crashes, because those run after the thread_locals are gone.
  struct owner {
    ~owner() { delete the_harness; }
  };
  thread_local owner last;
  (void)last;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  auto& h = *the_harness;
  std::string_view rest{reinterpret_cast<const char*>(data) + 1, size - 1};
  auto request = (data[0] & 3) == 0 ? std::string{rest} : built_request(data[0], rest);
  auto reply = exchange(request);
  // A reply, when one came, is HTTP. A 5xx other than 503 (the server is busy) means a handler
  // failed on its input: logged, with the request, for the report (docs/fuzzing.md).
  int status = status_of(reply);
  if (!reply.empty() && status == 0)
    fail("a reply that is not HTTP: " + reply.substr(0, 200));
  if (status >= 500 && status != 503 && ++h.server_errors <= 20)
    std::fprintf(stderr, "http_fuzz: HTTP %d for a request of %zu bytes: %s\n", status,
                 request.size(), reply.substr(0, 300).c_str());
  if (++h.inputs % check_every == 0)
    check_server(h);
  return 0;
}
