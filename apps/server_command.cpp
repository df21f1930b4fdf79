#include "apps/server_command.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "actors/server/server.hpp"
#include "apps/daemon.hpp"
#include "apps/http_api.hpp"
#include "apps/http_guard.hpp"
#include "apps/http_settings.hpp"
#include "apps/abandoned_runs.hpp"
#include "apps/browser_sessions.hpp"
#include "apps/interrupt.hpp"
#include "apps/run_command.hpp"
#include "apps/text_table.hpp"
#include "messages/version.hpp"
#include "storage/home.hpp"
#include "storage/server_files.hpp"

namespace cdui::apps {

namespace {

/// Set when one of the server's own actors died (cdui::server::config::on_failure).
std::atomic<bool> actor_failed{false};

/// HTTP worker threads: each connection holds one while it is open. One client address holds at
/// most half of them (CODEFYUI_HTTP_MAX_CONNECTIONS_PER_CLIENT, default 32) and waiting long-polls
/// another half, so a slow client and a crowd of followers together still leave threads free.
constexpr std::size_t http_threads = 128;
/// Long-polls that wait at once (each holds a thread); more answer at once, as with wait=0.
constexpr std::size_t max_waiting_polls = http_threads / 2;
/// Connections the kernel holds for the HTTP server until it accepts them (a burst of followers).
constexpr int http_listen_backlog = 512;
/// How long `cdui start` waits for the server it started to answer.
constexpr auto start_timeout = std::chrono::seconds(60);

void set_up_logging(const std::filesystem::path& home) {
  std::vector<spdlog::sink_ptr> sinks;
  sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>((home / "server.log").string()));
  sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  auto logger = std::make_shared<spdlog::logger>("cdui", sinks.begin(), sinks.end());
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

std::string already_running(const std::filesystem::path& home) {
  auto address = storage::read_server_json(home);
  if (storage::home_lock::server_running(home) && address)
    return "a cdui server is already running on " + home.string() + " (pid "
           + std::to_string(address->pid) + ", " + address->http_url() + ")";
  return "the home " + home.string() + " is in use by embedded `cdui run` processes; start the "
         "server when they have ended";
}

/// The address ZeroMQ binds for `host`: an IPv4 address as it is, a name resolved to its first
/// IPv4 address (ZeroMQ binds addresses and interfaces, not host names).
std::string zmq_bind_host(const std::string& host) {
  if (host == "localhost")
    return "127.0.0.1";
  in_addr address{};
  if (::inet_pton(AF_INET, host.c_str(), &address) == 1)
    return host;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr)
    return host;  // the bind fails and its error names the host
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  ::freeaddrinfo(found);
  return text;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

/// Whether the agents' wire is encrypted: always when it listens beyond loopback (so no token
/// crosses the network in the clear; docs/workers.md, "Security"), and on loopback too with
/// CODEFYUI_ZMQ_CURVE=on.
bool zmq_curve(const std::string& host) {
  const char* text = std::getenv("CODEFYUI_ZMQ_CURVE");
  std::string setting = text != nullptr ? text : "";
  if (setting == "on")
    return true;
  if (!setting.empty() && setting != "auto")
    spdlog::warn("CODEFYUI_ZMQ_CURVE: '{}' is neither 'auto' nor 'on'; using auto (encrypted "
                 "unless the server listens on loopback only)", setting);
  return !is_loopback(host);
}

/// Where queued local runs execute: --isolation, else $CODEFYUI_ISOLATION, else "thread". A bad
/// value of the variable stops the start (std::invalid_argument: exit 2, naming it).
std::string run_isolation(const start_options& options) {
  if (!options.isolation.empty())
    return options.isolation;
  const char* text = std::getenv("CODEFYUI_ISOLATION");
  std::string value = text != nullptr ? text : "";
  if (value.empty() || value == "thread" || value == "process")
    return value.empty() ? "thread" : value;
  throw std::invalid_argument("CODEFYUI_ISOLATION: '" + value
                              + "' is neither 'thread' nor 'process' (where queued runs execute)");
}

int serve(const start_options& options) {
  ::umask(077);  // what the server creates (server.log, cdui.db, runs, checkpoints) is this user's alone
  auto home = storage::default_home();
  auto lock = storage::home_lock::try_lock(home, storage::home_lock::mode::exclusive);
  if (!lock) {
    std::fprintf(stderr, "cdui: %s\n", already_running(home).c_str());
    return exit_run_failed;
  }
  // Blocked before any thread exists, so every thread inherits the mask and only sigwait below
  // sees the signals.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  set_up_logging(home);

  http_limits limits;
  try {
    limits = read_http_limits(options.max_body_mb, http_threads / 2);
  } catch (const std::invalid_argument& e) {
    spdlog::error("cannot start: {}", e.what());
    return exit_usage;
  }
  // The port first: a server that cannot listen must not pick up the queued runs (it would start
  // them, then interrupt them on its way out).
  http_guard http{limits};
  // cpp-httplib sets SO_REUSEPORT by default, which lets a second server bind the same port and
  // take half of its connections. Only SO_REUSEADDR: a restart may rebind a port in TIME_WAIT.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http.new_task_queue = [] { return new httplib::ThreadPool(http_threads); };
  // cpp-httplib writes headers and body in two sends: without TCP_NODELAY each answer waits ~40 ms
  // for the client's delayed ACK (bench_server measured 88 ms per POST, 3-7 ms with it).
  http.set_tcp_nodelay(true);
  // Polling clients keep their connection; an idle one holds a stop for at most this long.
  http.set_keep_alive_max_count(1000);
  http.set_keep_alive_timeout(2);
  http.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    spdlog::debug("{} {} -> {}", req.method, req.path, res.status);
  });
  int port = options.port;
  bool bound = port == 0 ? (port = http.bind_to_any_port(options.host)) > 0
                         : http.bind_to_port(options.host, port);
  if (!bound) {
    spdlog::error("cannot listen on {}:{} (is another program using the port? try --port)",
                  options.host, options.port);
    return exit_run_failed;
  }
  if (!http.set_listen_backlog(http_listen_backlog))
    spdlog::warn("cannot set the HTTP listen backlog to {}: {}", http_listen_backlog,
                 std::strerror(errno));
  http_api_options api;
  api.max_waiting_polls = max_waiting_polls;
  try {
    // Beyond loopback anyone who reaches the port could read every run: reads need the token too.
    const char* read_token = std::getenv(read_token_env);
    api.reads_need_token = reads_need_token(http.listens_on_loopback(), read_token ? read_token : "");
    // On loopback, a request without the token must name the server by a loopback name (DNS
    // rebinding); beyond it, every read needs the token or a sign-in already.
    api.host_names = http.listens_on_loopback() ? loopback_host_names(options.host) : std::vector<std::string>{};
  } catch (const std::invalid_argument& e) {
    spdlog::error("cannot start: {}", e.what());
    return exit_usage;
  }
  std::unique_ptr<cdui::server> runtime;
  // Written before the server binds its ZeroMQ port, so that a same-host agent never says hello
  // with the old token; put back as it was if the start fails.
  std::optional<storage::new_session_token> token;
  try {
    token.emplace(home);
    server::config cfg;
    cfg.home = home;
    cfg.resume = true;
    cfg.token = token->token();
    // Agents connect where HTTP listens; beyond loopback the wire is encrypted (CURVE), so that a
    // worker's runs and credential never cross a network in the clear.
    int zmq_port = options.zmq_port >= 0 ? options.zmq_port : (port == 0 || options.port == 0 ? 0 : port + 1);
    auto zmq_host = zmq_bind_host(options.host);
    cfg.zmq_endpoint = "tcp://" + zmq_host + ":" + std::to_string(zmq_port);
    cfg.zmq_curve = zmq_curve(zmq_host);
    if (run_isolation(options) == "process")
      cfg.run_process_binary = std::filesystem::read_symlink("/proc/self/exe");
    // One of the server's own actors died (logged by the server): stop as on SIGTERM, and exit 1.
    cfg.on_failure = [](const std::string&) {
      actor_failed.store(true);
      ::kill(::getpid(), SIGTERM);
    };
    runtime = std::make_unique<cdui::server>(cfg);
  } catch (const std::invalid_argument& e) {
    spdlog::error("cannot start: {}", e.what());  // a bad setting, e.g. CODEFYUI_SIM_DEVICES
    return exit_usage;
  } catch (const std::exception& e) {
    spdlog::error("cannot start: {}", e.what());  // the machine's fault: a port, the disk
    return exit_run_failed;
  }
  token->keep();  // the ports are bound and the store is open: this server runs
  api.token = token->token();
  api.sessions = std::make_shared<browser_sessions>();
  api.cookie_name = "cdui_session_" + std::to_string(port);
  mount_http_api(http, *runtime, api);
  storage::server_address address{options.host, port, static_cast<int>(::getpid()),
                                  runtime->zmq_endpoint(), runtime->zmq_public_key()};
  storage::write_server_json(home, address);
  std::thread listener{[&http] { http.listen_after_bind(); }};
  spdlog::info("cdui {} serving {}{}, agents on {}{} (home {}, pid {})", cdui::version(),
               address.http_url(), api.reads_need_token ? " (reads need the token)" : "",
               address.zmq, address.zmq_public_key.empty() ? "" : " (CURVE)", home.string(),
               address.pid);
  spdlog::info("dashboard: {}/ (`cdui ui` prints a link that signs a browser in)", address.http_url());
  spdlog::info("HTTP limits: bodies up to {} MiB, {} s to send a request, {} connections per client",
               limits.max_body_bytes >> 20,
               std::chrono::duration_cast<std::chrono::seconds>(limits.read_deadline).count(),
               limits.max_connections_per_client);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("stopping ({}): running runs end interrupted, queued runs wait for the next start",
               actor_failed.load() ? "an actor of the server failed"
               : sig == SIGINT    ? "SIGINT"
                                  : "SIGTERM");
  // New submits get 503 from here on; running runs stop between batches.
  runtime->shutdown();
  http.stop();
  listener.join();
  runtime.reset();
  std::error_code ec;
  std::filesystem::remove(storage::server_json_path(home), ec);
  spdlog::info("stopped");
  return exit_code_unless_runs_abandoned(actor_failed.load() ? exit_run_failed : exit_ok);
}

/// Starts `cdui start --foreground` detached from this terminal and waits until it answers.
int start_in_background(const start_options& options) {
  auto home = storage::default_home();
  if (!storage::home_lock::try_lock(home, storage::home_lock::mode::exclusive)) {
    std::fprintf(stderr, "cdui: %s\n", already_running(home).c_str());
    return exit_run_failed;
  }
  std::error_code size_error;
  auto log_size = std::filesystem::file_size(home / "server.log", size_error);
  if (size_error)
    log_size = 0;
  std::vector<std::string> args{"start", "--foreground", "--host", options.host, "--port",
                                std::to_string(options.port), "--zmq-port",
                                std::to_string(options.zmq_port)};
  if (options.max_body_mb) {
    args.push_back("--max-body-mb");
    args.push_back(std::to_string(*options.max_body_mb));
  }
  if (!options.isolation.empty()) {
    args.push_back("--isolation");
    args.push_back(options.isolation);
  }
  auto started = start_daemon(
    args,
    [&](pid_t child) {
      auto address = storage::read_server_json(home);
      auto token = storage::read_token(home);
      if (!address || address->pid != child || !token)
        return false;
      httplib::Client client{address->host, address->port};
      auto res = client.Get("/api/status", {{token_header, *token}});
      return res && res->status == 200;
    },
    start_timeout);
  auto child = started.pid;
  if (started.result == daemon_start::outcome::ready) {
    auto address = storage::read_server_json(home);
    std::printf("cdui server started: %s (pid %d, home %s)\n", address->http_url().c_str(), child,
                home.c_str());
    return exit_ok;
  }
  if (started.result == daemon_start::outcome::exited) {
    // Its reason is the last error it logged; a bad setting exits 2, as in the foreground.
    std::ifstream log{home / "server.log"};
    log.seekg(static_cast<std::streamoff>(log_size));  // what this start logged, not an earlier one
    std::string line;
    std::string reason;
    while (std::getline(log, line))
      if (line.find("[error]") != std::string::npos)
        reason = line.substr(line.find("[error]") + 8);
    std::fprintf(stderr, "cdui: the server did not start%s%s; see %s\n", reason.empty() ? "" : ": ",
                 reason.c_str(), (home / "server.log").c_str());
    return started.exit_code == exit_usage ? exit_usage : exit_run_failed;
  }
  std::fprintf(stderr, "cdui: the server (pid %d) did not answer within %lld s; see %s\n", child,
               static_cast<long long>(start_timeout.count()), (home / "server.log").c_str());
  return exit_run_failed;
}

} // namespace

int start_command(const start_options& options) {
  return options.foreground ? serve(options) : start_in_background(options);
}

} // namespace cdui::apps
