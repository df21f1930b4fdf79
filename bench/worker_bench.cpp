// Runs on workers and the heartbeats of many agents, against the real `cdui start --foreground
// --port 0` (a temp CODEFYUI_HOME each, CODEFYUI_WORKER_HEARTBEAT_S=1), measured in one run:
//   1. submit -> start over ZeroMQ on loopback, without a subprocess: in this process a hand-made
//      agent on a DEALER socket (testkit/wire_peer.hpp's raw_peer) says hello with the
//      session token, cdui::version() and the server's node-types digest, offering cpu and
//      --devices sim cards, and heartbeats at the interval the welcome gives. When it receives an
//      assign_run it answers at once with a run_update carrying an execution_start event (worker
//      cursor 1) and a run_done succeeded (last_cursor 1); the server's run_ack is read and
//      ignored. --submits POST /api/runs of moons_graph_json(1, 1) targeted at it, on
//      sim:0..sim:N-1 round robin, through one keep-alive cpp-httplib Client with TCP_NODELAY.
//      Timed: from just before each POST to the moment the agent's thread has read the assign_run
//      off its socket (the server's part of a start: HTTP, validation, run folder, SQLite,
//      admission, the registry and the bridge); p50/p99/max, goal p99 < 5 ms. One run in flight:
//      after each POST the bench waits for the assign_run, then polls GET /api/runs/{id} until
//      active is false, untimed, before the next POST. 5 untimed submits come first.
//   2. the subprocess start: a real `cdui agent start --foreground` (CODEFYUI_SIM_DEVICES=1x1GiB,
//      its own name) on the same server; --spawns runs of the same 1-step graph on its sim:0, one
//      at a time. Per run: the server-stamped execution_start time_ms from GET
//      /api/runs/{id}/events minus the run's started_ms from GET /api/runs/{id} (what the issue
//      asks), and, because the server stamps a worker's events when they reach it, the same from
//      the event times `cdui exec` wrote itself in the worker's run folder (the same host, the same
//      clock): its first event (execution_facts) and its execution_start; and the time of the
//      agent's log line that says it forked the run's process. p50/max. The agent is
//      stopped by its pid (SIGTERM) and no `cdui exec` of the home may be left.
//   3. heartbeats from --agents hand-made agents in this process, one ZeroMQ context, one DEALER
//      socket each, on a fresh server: each says hello (bench-0..bench-N-1, cpu and one sim card)
//      and waits for its welcome; then the sockets send heartbeats round robin, as fast as this
//      thread can (dontwait; a full queue skips that socket), for --seconds. Reported: heartbeats
//      sent/s; the heartbeats the server took in over the same window (the zmq_bridge's frames_in
//      from GET /api/status, read before and after); the server's CPU seconds over the window
//      (/proc/<pid>/stat utime+stime) as a share of one core, beside this process's and the whole
//      machine's (/proc/stat: other processes share the 2 cores). Then every agent heartbeats once
//      a second until the server has taken in everything sent (or 60 s): how fast that backlog
//      went in, with the server's CPU then; and GET /api/workers' count of online workers.
// The servers and the agent are stopped by their pids (SIGTERM, then SIGKILL after 30 s) and every
// temp folder is removed (a failed run leaves its folder, with the logs). Only 127.0.0.1.
// Usage: bench_worker [--submits 500] [--devices 64] [--spawns 10] [--agents 500] [--seconds 10]
//                     [--cdui PATH] [--tmp DIR (default: the temp directory)]
//                     [--only submit|spawn|heartbeats]
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "messages/clock.hpp"
#include "messages/version.hpp"
#include "messages/wire.hpp"
#include "messages/worker.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"
#include "testkit/server_process.hpp"
#include "testkit/wire_peer.hpp"

using nlohmann::json;
using namespace cdui;
namespace fs = std::filesystem;
using bench_clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

/// The goal for submit -> start, without the subprocess.
constexpr double start_goal_p99_ms = 5.0;
/// The servers' heartbeat interval (CODEFYUI_WORKER_HEARTBEAT_S): Degraded after 2 s without one.
constexpr const char* heartbeat_seconds = "1";
/// Submits before the timed ones: the connection, the store and the run queue warm up.
constexpr int warm_submits = 5;
constexpr auto server_start_timeout = 60s;
constexpr auto process_stop_timeout = 30s;
/// How long a run, a welcome or a worker's status may take before the bench gives up.
constexpr auto wait_timeout = 60s;
/// File descriptors per hand-made agent: its TCP connection here and in the server, and the
/// socket's mailbox; plus a margin for everything else.
constexpr rlim_t fds_per_agent = 3;
constexpr rlim_t fds_margin = 256;
constexpr const char* fake_agent_name = "bench-fake";
constexpr const char* real_agent_name = "bench-agent";

struct options {
  int submits = 500;
  int devices = 64;
  int spawns = 10;
  int agents = 500;
  int seconds = 10;
  std::string cdui = CDUI_BINARY;
  /// Where the temp homes go (their file system decides what a run folder and a SQLite sync cost).
  fs::path tmp = fs::temp_directory_path();
  /// submit, spawn or heartbeats: only that part (to profile one); empty: all.
  std::string only;
};

options parse_options(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_worker: %s needs a value\n", flag.c_str());
      std::exit(2);
    }
    std::string value = argv[++i];
    auto number = [&] {
      char* end = nullptr;
      auto n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0') {
        std::fprintf(stderr, "bench_worker: %s needs a number, not '%s'\n", flag.c_str(), value.c_str());
        std::exit(2);
      }
      return static_cast<int>(n);
    };
    if (flag == "--submits")
      o.submits = number();
    else if (flag == "--devices")
      o.devices = number();
    else if (flag == "--spawns")
      o.spawns = number();
    else if (flag == "--agents")
      o.agents = number();
    else if (flag == "--seconds")
      o.seconds = number();
    else if (flag == "--cdui")
      o.cdui = value;
    else if (flag == "--tmp")
      o.tmp = value;
    else if (flag == "--only" && (value == "submit" || value == "spawn" || value == "heartbeats"))
      o.only = value;
    else {
      std::fprintf(stderr, "bench_worker: unknown flag %s (known: --submits --devices --spawns "
                           "--agents --seconds --cdui --tmp, --only submit|spawn|heartbeats)\n", flag.c_str());
      std::exit(2);
    }
  }
  if (o.submits < 1 || o.devices < 1 || o.spawns < 1 || o.agents < 1 || o.seconds < 1) {
    std::fprintf(stderr, "bench_worker: sizes must be >= 1\n");
    std::exit(2);
  }
  return o;
}

/// Thrown on anything unexpected; main() catches it after the destructors have stopped every child.
struct bench_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& what) {
  throw bench_failure{what};
}

double seconds_since(bench_clock::time_point start) {
  return std::chrono::duration<double>(bench_clock::now() - start).count();
}

double ms_between(bench_clock::time_point a, bench_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// CPU seconds this process has used, all threads.
double process_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

/// CPU seconds (utime + stime) another process has used, from /proc/<pid>/stat.
double other_process_cpu_seconds(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string stat{std::istreambuf_iterator<char>{in}, {}};
  auto close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos)
    return 0;
  std::vector<std::string> fields;  // from field 3 (state) on
  std::size_t i = close + 2;
  while (i < stat.size()) {
    auto j = stat.find(' ', i);
    fields.push_back(stat.substr(i, j - i));
    if (j == std::string::npos)
      break;
    i = j + 1;
  }
  if (fields.size() < 13)
    return 0;
  auto ticks = std::stod(fields[11]) + std::stod(fields[12]);  // utime (14), stime (15)
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

/// The whole machine's busy and total CPU seconds so far, from /proc/stat's first line.
std::pair<double, double> machine_cpu_seconds() {
  std::ifstream in{"/proc/stat"};
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  auto tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  auto busy = user + nice + system + irq + softirq + steal;
  return {busy / tick, (busy + idle + iowait) / tick};
}

/// The value at fraction `q` of sorted `v` (nearest rank).
double quantile(const std::vector<double>& sorted, double q) {
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size()) - 1e-9));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

std::string sim_key(int i) {
  return "sim:" + std::to_string(i);
}

/// Raises RLIMIT_NOFILE to its hard limit (the servers started later inherit it); says so when
/// even that is too low for `agents` sockets.
void raise_fd_limit(int agents) {
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  auto soft = r.rlim_cur;
  r.rlim_cur = r.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &r) != 0)
    std::perror("setrlimit(RLIMIT_NOFILE)");
  ::getrlimit(RLIMIT_NOFILE, &r);
  auto needed = static_cast<rlim_t>(agents) * fds_per_agent + fds_margin;
  std::printf("open files: soft limit %llu raised to the hard limit %llu (%d agents need about %llu)\n",
              static_cast<unsigned long long>(soft), static_cast<unsigned long long>(r.rlim_cur),
              agents, static_cast<unsigned long long>(needed));
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < needed)
    std::printf("  WARNING: the hard limit is too low for %d agents: raise it (ulimit -Hn) or pass "
                "a smaller --agents\n", agents);
}

/// The worker_registry's mailbox length in GET /api/status.
std::int64_t registry_mailbox(const test::server_process& srv) {
  auto status = srv.get_json("/api/status");
  for (const auto& child : status["children"])
    if (child["kind"] == "worker_registry")
      return child.value("mailbox", std::int64_t{-1});
  return -1;
}

/// The offers of a hand-made agent: the cpu and `cards` sim cards.
std::vector<device_offer> sim_offers(int cards) {
  constexpr std::int64_t gib = 1LL << 30;
  std::vector<device_offer> d{{"cpu", "cpu", "cpu-bench", 8 * gib, 4 * gib}};
  for (int i = 0; i < cards; ++i)
    d.push_back({sim_key(i), "sim", "sim-bench-" + std::to_string(i), gib, gib});
  return d;
}

// --- 1. submit -> start, the hand-made agent -----------------------------------------------------

/// An agent that starts nothing: on assign_run it notes the time, then reports an execution_start
/// event and a success. Its socket lives on its own thread; the main thread reads what it noted.
class instant_agent {
public:
  instant_agent(const std::string& endpoint, hello h) : hello_(std::move(h)), peer_(endpoint) {
    thread_ = std::thread([this] { loop(); });
  }

  ~instant_agent() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
  }

  instant_agent(const instant_agent&) = delete;
  instant_agent& operator=(const instant_agent&) = delete;

  /// Waits for the welcome; its heartbeat interval.
  std::uint32_t await_welcome() {
    std::unique_lock lock{mutex_};
    if (!changed_.wait_for(lock, wait_timeout, [&] { return heartbeat_ms_ > 0 || !refusal_.empty(); }))
      fail("the hand-made agent got no welcome in 60 s");
    if (!refusal_.empty())
      fail("the server refused the hand-made agent: " + refusal_);
    return heartbeat_ms_;
  }

  /// When the assign_run of `run_id` was read off the socket.
  bench_clock::time_point await_assign(const std::string& run_id) {
    std::unique_lock lock{mutex_};
    if (!changed_.wait_for(lock, wait_timeout,
                           [&] { return assigned_.count(run_id) > 0 || !refusal_.empty(); }))
      fail("run " + run_id + " was never assigned to the hand-made agent");
    if (!refusal_.empty())
      fail(refusal_);
    auto t = assigned_[run_id];
    assigned_.erase(run_id);
    return t;
  }

  [[nodiscard]] int heartbeats() const { return heartbeats_; }

private:
  void loop() {
    try {
      serve();
    } catch (const std::exception& e) {
      std::lock_guard lock{mutex_};
      refusal_ = std::string{"the hand-made agent failed: "} + e.what();
      changed_.notify_all();
    }
  }

  void serve() {
    peer_.send(wire::message_type::hello, hello_);
    auto every = 10'000ms;
    auto last_heartbeat = bench_clock::now();
    while (!stop_) {
      // Short: the destructor's flag is seen soon.
      for (auto m = peer_.receive(10ms); m; m = peer_.receive())
        handle(m->first, m->second, every);
      if (heartbeat_ms_ > 0 && bench_clock::now() - last_heartbeat >= every) {
        peer_.send(wire::message_type::heartbeat, heartbeat{hello_.devices, {}});
        last_heartbeat = bench_clock::now();
        ++heartbeats_;
      }
    }
  }

  void handle(wire::message_type type, const std::string& payload, std::chrono::milliseconds& every) {
    auto received = bench_clock::now();
    if (type == wire::message_type::assign_run) {
      auto a = wire::decode<assign_run>(payload);
      if (!a)
        fail("an assign_run that does not decode");
      {
        std::lock_guard lock{mutex_};
        assigned_[a->run_id] = received;
      }
      changed_.notify_all();
      json start{{"device", a->devices.empty() ? std::string{"cpu"} : a->devices.front()}};
      peer_.send(wire::message_type::run_update,
                   run_update{a->run_id, {run_event{1, now_ms(), "execution_start", start.dump()}}});
      run_done done;
      done.run_id = a->run_id;
      done.outcome = run_outcome{run_status::succeeded, "", "{}"};
      done.last_cursor = 1;  // the server takes the end once it has every event up to here
      peer_.send(wire::message_type::run_done, done);
    } else if (type == wire::message_type::welcome) {
      auto w = wire::decode<welcome>(payload);
      if (!w)
        fail("a welcome that does not decode");
      every = std::chrono::milliseconds(w->heartbeat_interval_ms);
      {
        std::lock_guard lock{mutex_};
        heartbeat_ms_ = w->heartbeat_interval_ms;
      }
      changed_.notify_all();
    } else if (type == wire::message_type::refused) {
      auto r = wire::decode<refused>(payload);
      std::lock_guard lock{mutex_};
      refusal_ = r ? r->reason : "(a refusal that does not decode)";
      changed_.notify_all();
    }
  }

  hello hello_;
  test::raw_peer peer_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, bench_clock::time_point> assigned_;
  std::uint32_t heartbeat_ms_ = 0;
  std::string refusal_;
  std::atomic<int> heartbeats_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// The 1-step moons graph, on whatever card the run is given (no node names a device).
json one_step_graph() {
  return test::moons_graph_json(1, 1, 16, std::nullopt);
}

void print_ms(const char* label, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  std::printf("  %s: p50 %.3f, p99 %.3f, max %.3f ms\n", label, quantile(ms, 0.5),
              quantile(ms, 0.99), ms.back());
}

void measure_submit(const options& o, test::server_process& srv) {
  auto digest = srv.get_json("/api/workers")["node_types_digest"].get<std::string>();
  instant_agent agent{srv.zmq_endpoint(),
                      test::make_hello(fake_agent_name, srv.token(), sim_offers(o.devices), digest, "bench")};
  auto heartbeat_ms = agent.await_welcome();
  test::await_worker(srv, fake_agent_name, "online", wait_timeout);
  auto graph = one_step_graph();

  std::vector<double> start_ms, post_ms, after_answer_ms;
  int succeeded = 0;
  auto cpu_before = other_process_cpu_seconds(srv.pid());
  auto wall = bench_clock::now();
  for (int i = -warm_submits; i < o.submits; ++i) {
    auto body = test::body_on_worker(graph, fake_agent_name, {sim_key((i + warm_submits) % o.devices)});
    auto sent = bench_clock::now();
    auto id = srv.submit_ok(body);
    auto answered = bench_clock::now();
    auto assigned = agent.await_assign(id);
    auto run = srv.wait_final(id, wait_timeout, 200us);
    if (i < 0)
      continue;
    start_ms.push_back(ms_between(sent, assigned));
    post_ms.push_back(ms_between(sent, answered));
    after_answer_ms.push_back(ms_between(answered, assigned));
    succeeded += run["status"] == "succeeded";
  }
  auto wall_seconds = seconds_since(wall);
  auto server_cpu = other_process_cpu_seconds(srv.pid()) - cpu_before;

  std::printf("\nsubmit -> start on a hand-made agent over ZeroMQ (no subprocess): %d POST "
              "/api/runs of a 1-step moons graph, round robin over %d sim cards, one run at a time; "
              "welcome said heartbeat every %u ms\n", o.submits, o.devices, heartbeat_ms);
  std::vector<double> sorted = start_ms;
  std::sort(sorted.begin(), sorted.end());
  auto p99 = quantile(sorted, 0.99);
  std::printf("  POST sent -> assign_run read by the agent: p50 %.3f, p99 %.3f, max %.3f ms "
              "(goal p99 < %.0f ms: %s)\n", quantile(sorted, 0.5), p99, sorted.back(),
              start_goal_p99_ms, p99 < start_goal_p99_ms ? "met" : "NOT met");
  print_ms("of which POST sent -> answer parsed", post_ms);
  print_ms("and answer parsed -> assign_run read (negative: it came first)", after_answer_ms);
  std::printf("  %d of %d runs succeeded; %d heartbeats sent; the server used %.2f CPU s in those "
              "%.2f s (the loop also waits for each run's end)\n", succeeded, o.submits,
              agent.heartbeats(), server_cpu, wall_seconds);
}

// --- 2. the subprocess start, a real agent -------------------------------------------------------

/// The events `cdui exec` wrote itself, in the worker's run folder.
std::vector<json> exec_events(const fs::path& run_dir) {
  std::vector<json> events;
  std::ifstream in{run_dir / "events.jsonl"};
  for (std::string line; std::getline(in, line);)
    events.push_back(json::parse(line, nullptr, false));
  return events;
}

std::optional<std::int64_t> time_of(const std::vector<json>& events, const std::string& type) {
  for (const auto& e : events)
    if (e.is_object() && e["type"] == type)
      return e["time_ms"].get<std::int64_t>();
  return std::nullopt;
}

/// When the agent logged that it had forked the run's process ("run ID started (pid N)"), in ms
/// since the epoch: spdlog's "[%Y-%m-%d %H:%M:%S.%e]" stamp, in local time.
std::optional<std::int64_t> forked_ms(const fs::path& agent_log, const std::string& run_id) {
  std::ifstream in{agent_log};
  auto needle = "run " + run_id + " started (pid";
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) == std::string::npos || line.size() < 25 || line[0] != '[')
      continue;
    std::tm tm{};
    if (::strptime(line.c_str() + 1, "%Y-%m-%d %H:%M:%S", &tm) == nullptr)
      return std::nullopt;
    tm.tm_isdst = -1;
    return static_cast<std::int64_t>(std::mktime(&tm)) * 1000 + std::stoi(line.substr(21, 3));
  }
  return std::nullopt;
}

void print_p50_max(const char* label, std::vector<double> ms) {
  if (ms.empty()) {
    std::printf("  %s: none\n", label);
    return;
  }
  std::sort(ms.begin(), ms.end());
  std::printf("  %s: p50 %.0f, max %.0f ms (", label, quantile(ms, 0.5), ms.back());
  for (std::size_t i = 0; i < ms.size(); ++i)
    std::printf("%s%.0f", i ? " " : "", ms[i]);
  std::printf(")\n");
}

void measure_spawn(const options& o, test::server_process& srv, const fs::path& dir) {
  test::process agent{{o.cdui, "agent", "start", "--foreground", "--name", real_agent_name},
                      {{"CODEFYUI_HOME", srv.home().string()}, {"CODEFYUI_SIM_DEVICES", "1x1GiB"}},
                      dir / "agent.log"};
  auto joined = bench_clock::now();
  test::await_worker(srv, real_agent_name, "online", wait_timeout);
  auto join_seconds = seconds_since(joined);
  auto graph = one_step_graph();
  std::vector<double> server_stamped, forked, exec_first, exec_start, run_ms;
  int succeeded = 0;
  for (int i = 0; i < o.spawns; ++i) {
    auto id = srv.submit_ok(test::body_on_worker(graph, real_agent_name, {"sim:0"}));
    auto run = srv.wait_final(id, wait_timeout, 5ms);
    succeeded += run["status"] == "succeeded";
    auto started = run["started_ms"].get<std::int64_t>();
    if (auto t = time_of(srv.all_events(id), "execution_start"))
      server_stamped.push_back(static_cast<double>(*t - started));
    auto run_dir = srv.home() / "agents" / real_agent_name / "runs" / id;
    if (auto t = forked_ms(dir / "agent.log", id))
      forked.push_back(static_cast<double>(*t - started));
    auto mine = exec_events(run_dir);
    if (auto t = time_of(mine, "execution_facts"))
      exec_first.push_back(static_cast<double>(*t - started));
    if (auto t = time_of(mine, "execution_start"))
      exec_start.push_back(static_cast<double>(*t - started));
    run_ms.push_back(static_cast<double>(run["finished_ms"].get<std::int64_t>() - started));
  }
  auto agent_pid = agent.pid();
  auto stop_seconds = agent.stop(process_stop_timeout);
  auto left = test::run_processes(srv.home());
  for (auto pid : left)
    ::kill(pid, SIGKILL);

  std::printf("\nsubprocess start: a real `cdui agent start --foreground` (pid %d, online %.2f s after "
              "it was started), %d runs of the 1-step moons graph on its sim:0, one at a time\n",
              agent_pid, join_seconds, o.spawns);
  print_p50_max("execution_start as the server stamped it - started_ms", server_stamped);
  print_p50_max("the agent logged its fork (run folder made, fork returned) - started_ms", forked);
  print_p50_max("`cdui exec`'s own first event (execution_facts) - started_ms", exec_first);
  print_p50_max("`cdui exec`'s own execution_start - started_ms", exec_start);
  print_p50_max("whole run, finished_ms - started_ms", run_ms);
  std::printf("  %d of %d runs succeeded; the agent stopped %.2f s after SIGTERM (exit code %d); "
              "`cdui exec` processes left: %zu%s\n", succeeded, o.spawns, stop_seconds,
              agent.wait_for(0ms).value_or(-1), left.size(), left.empty() ? "" : " (killed)");
}

// --- 3. heartbeats from many agents --------------------------------------------------------------

/// `agents` DEALER sockets in one context, each a worker bench-i that has been welcomed.
class agent_swarm {
public:
  agent_swarm(int agents, test::server_process& srv) {
    // libzmq's default is 1023 sockets per context; a little room for its own.
    context_.set(zmq::ctxopt::max_sockets, agents + 64);
    auto digest = srv.get_json("/api/workers")["node_types_digest"].get<std::string>();
    offers_ = sim_offers(1);
    heartbeat_ = test::wire_frames(wire::message_type::heartbeat, heartbeat{offers_, {}});
    peers_.reserve(static_cast<std::size_t>(agents));
    for (int i = 0; i < agents; ++i) {
      peers_.emplace_back(context_, srv.zmq_endpoint());
      peers_.back().send(wire::message_type::hello,
                         test::make_hello("bench-" + std::to_string(i), srv.token(), offers_, digest, "bench"));
    }
  }

  /// Waits until every socket has its welcome.
  void await_welcomes() {
    std::vector<bool> welcomed(peers_.size(), false);
    std::size_t count = 0;
    auto deadline = bench_clock::now() + wait_timeout;
    while (count < peers_.size()) {
      if (bench_clock::now() > deadline)
        fail(std::to_string(peers_.size() - count) + " agents got no welcome in 60 s");
      auto items = poll_items();
      zmq::poll(items, 100ms);
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (!(items[i].revents & ZMQ_POLLIN))
          continue;
        while (auto m = peers_[i].receive()) {
          if (m->first == wire::message_type::refused)
            fail("agent bench-" + std::to_string(i) + " was refused: "
                 + wire::decode<refused>(m->second).value_or(refused{}).reason);
          if (m->first == wire::message_type::welcome && !welcomed[i]) {
            welcomed[i] = true;
            ++count;
          }
        }
      }
    }
  }

  struct flood_result {
    std::uint64_t sent = 0;
    std::uint64_t skipped = 0;  // a socket's queue was full (its high-water mark)
  };

  /// Heartbeats round robin over the sockets, as fast as this thread can, until `end`.
  flood_result flood(bench_clock::time_point end) {
    flood_result r;
    std::array<zmq::const_buffer, 2> frames{zmq::buffer(heartbeat_[0]), zmq::buffer(heartbeat_[1])};
    while (bench_clock::now() < end) {
      for (auto& p : peers_) {
        if (zmq::send_multipart(p.socket(), frames, zmq::send_flags::dontwait))
          ++r.sent;
        else
          ++r.skipped;
      }
    }
    return r;
  }

  /// One heartbeat from every socket (blocking sends); how many were sent.
  std::uint64_t heartbeat_all() {
    for (auto& p : peers_)
      if (!p.send(heartbeat_))
        fail("a heartbeat could not be sent");
    return peers_.size();
  }

  /// Reads whatever the server sent since; counts by type.
  std::map<std::string, int> drain_incoming() {
    std::map<std::string, int> seen;
    for (auto& p : peers_)
      while (auto m = p.receive())
        ++seen[wire::to_string(m->first)];
    return seen;
  }

private:
  std::vector<zmq::pollitem_t> poll_items() {
    std::vector<zmq::pollitem_t> items;
    for (auto& p : peers_)
      items.push_back({p.socket().handle(), 0, ZMQ_POLLIN, 0});
    return items;
  }

  zmq::context_t context_{1};
  std::vector<test::raw_peer> peers_;
  std::vector<device_offer> offers_;
  std::vector<std::string> heartbeat_;  // its two frames, encoded once
};

void measure_heartbeats(const options& o, test::server_process& srv) {
  auto connect_start = bench_clock::now();
  agent_swarm swarm{o.agents, srv};
  swarm.await_welcomes();
  auto join_seconds = seconds_since(connect_start);
  // Everything the hellos caused has been taken in before the window opens.
  std::this_thread::sleep_for(500ms);
  (void)swarm.drain_incoming();

  auto frames_before = test::bridge_state(srv)["frames_in"].get<std::uint64_t>();
  auto server_cpu_before = other_process_cpu_seconds(srv.pid());
  auto own_cpu_before = process_cpu_seconds();
  auto machine_before = machine_cpu_seconds();
  double load_before[1] = {};
  (void)::getloadavg(load_before, 1);
  auto window_start = bench_clock::now();
  auto flood = swarm.flood(window_start + std::chrono::seconds(o.seconds));
  auto flood_seconds = seconds_since(window_start);
  auto own_cpu = process_cpu_seconds() - own_cpu_before;
  // GET /api/status waits its turn in the registry's mailbox, behind the heartbeats queued there;
  // the server's CPU is read at the same moment as the counter.
  auto asked = bench_clock::now();
  auto frames_after = test::bridge_state(srv)["frames_in"].get<std::uint64_t>();
  auto window_seconds = seconds_since(window_start);
  auto server_cpu_at_end = other_process_cpu_seconds(srv.pid());
  auto server_cpu = server_cpu_at_end - server_cpu_before;
  auto machine_after = machine_cpu_seconds();
  auto machine_busy = machine_after.first - machine_before.first;
  auto machine_total = machine_after.second - machine_before.second;
  auto status_seconds = seconds_since(asked);
  auto mailbox = registry_mailbox(srv);

  // Heartbeats once a second until the server has taken in all that was sent.
  auto taken_in = frames_after - frames_before;
  std::uint64_t sent_after = 0;
  auto drain_start = bench_clock::now();
  auto next_beat = drain_start;
  std::uint64_t frames_now = frames_after;
  while (frames_now - frames_before < flood.sent + sent_after
         && bench_clock::now() - drain_start < wait_timeout) {
    if (bench_clock::now() >= next_beat) {
      sent_after += swarm.heartbeat_all();
      next_beat += 1s;
    }
    std::this_thread::sleep_for(100ms);
    frames_now = test::bridge_state(srv)["frames_in"].get<std::uint64_t>();
  }
  auto drain_seconds = seconds_since(drain_start);
  auto drain_server_cpu = other_process_cpu_seconds(srv.pid()) - server_cpu_at_end;
  auto drained = frames_now - frames_after;
  auto lost = static_cast<std::int64_t>(flood.sent + sent_after) - static_cast<std::int64_t>(frames_now - frames_before);
  (void)swarm.heartbeat_all();  // a fresh one from everyone before the count
  std::this_thread::sleep_for(200ms);
  int online = 0;
  std::map<std::string, int> statuses;
  auto workers = srv.get_json("/api/workers");
  for (const auto& w : workers["workers"]) {
    ++statuses[w["status"].get<std::string>()];
    online += w["status"] == "online";
  }
  auto replies = swarm.drain_incoming();

  std::printf("\nheartbeats from %d hand-made agents in one process (one ZeroMQ context, one I/O "
              "thread, a DEALER socket each; all welcomed %.2f s after the first connect), sent as "
              "fast as one thread can for %.2f s\n", o.agents, join_seconds, flood_seconds);
  std::printf("  heartbeats sent: %llu, %.0f/s (a socket at its high-water mark was skipped %llu "
              "times); this process used %.2f CPU s\n",
              static_cast<unsigned long long>(flood.sent), flood.sent / flood_seconds,
              static_cast<unsigned long long>(flood.skipped), own_cpu);
  std::printf("  the server took in (zmq_bridge frames_in): %llu in %.2f s, %.0f/s; GET /api/status "
              "took %.3f s to answer; the registry's mailbox held %lld after it\n",
              static_cast<unsigned long long>(taken_in), window_seconds, taken_in / window_seconds,
              status_seconds, static_cast<long long>(mailbox));
  std::printf("  the server used %.2f CPU s in those %.2f s: %.0f%% of one core (%.0f%% of the "
              "machine's %u)\n", server_cpu, window_seconds, 100 * server_cpu / window_seconds,
              100 * server_cpu / window_seconds / std::thread::hardware_concurrency(),
              std::thread::hardware_concurrency());
  std::printf("  the machine was %.0f%% busy over the window (server %.0f%%, this process %.0f%%, "
              "everything else %.0f%% of its CPU time); load average %.2f before it\n",
              100 * machine_busy / machine_total, 100 * server_cpu / machine_total,
              100 * own_cpu / machine_total,
              100 * std::max(0.0, machine_busy - server_cpu - own_cpu) / machine_total, load_before[0]);
  std::printf("  after the flood: %s %.2f s later (%llu more heartbeats at 1/s each meanwhile); "
              "%lld sent but not taken in; the backlog went in at %.0f/s with the server at %.0f%% "
              "of one core\n",
              lost <= 0 ? "everything sent was taken in" : "gave up waiting", drain_seconds,
              static_cast<unsigned long long>(sent_after), static_cast<long long>(lost),
              drained / drain_seconds, 100 * drain_server_cpu / drain_seconds);
  std::printf("  GET /api/workers at the end: %d online of %zu workers (", online,
              workers["workers"].size());
  bool first = true;
  for (const auto& [s, n] : statuses) {
    std::printf("%s%s %d", first ? "" : ", ", s.c_str(), n);
    first = false;
  }
  std::printf(")");
  for (const auto& [type, n] : replies)
    std::printf("; the agents were sent %d %s", n, type.c_str());
  std::printf("\n");
}

/// The servers' environment: one sim card, heartbeats every `heartbeat_seconds`.
std::map<std::string, std::string> server_env() {
  return {{"CODEFYUI_SIM_DEVICES", "1x1GiB"}, {"CODEFYUI_WORKER_HEARTBEAT_S", heartbeat_seconds}};
}

/// The --cdui binary, its log in `dir`, one keep-alive client for the timed requests.
test::server_launch launch_for(const options& o, const fs::path& dir) {
  test::server_launch launch;
  launch.binary = o.cdui;
  launch.log = dir / "server.log";
  launch.keep_alive = true;
  launch.start_timeout = server_start_timeout;
  launch.stop_timeout = process_stop_timeout;
  return launch;
}

int run_bench(const options& o) {
  if (::access(o.cdui.c_str(), X_OK) != 0)
    fail(o.cdui + " is not an executable cdui (use --cdui PATH)");
  auto part = [&](const char* name) { return o.only.empty() || o.only == name; };
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a profiler started beside it reads the pids as printed
  raise_fd_limit(part("heartbeats") ? o.agents : 0);
  std::signal(SIGPIPE, SIG_IGN);

  if (part("submit") || part("spawn")) {
    auto dir = test::fresh_temp_dir("worker", o.tmp);
    {
      test::server_process srv{dir / "home", server_env(), launch_for(o, dir)};
      std::printf("`cdui start --foreground --port 0` (%s, pid %d, started in %.2f s), agents at %s, "
                  "CODEFYUI_WORKER_HEARTBEAT_S=%s\n", o.cdui.c_str(), srv.pid(), srv.start_seconds(),
                  srv.zmq_endpoint().c_str(), heartbeat_seconds);
      if (part("submit"))
        measure_submit(o, srv);
      if (part("spawn"))
        measure_spawn(o, srv, dir);
      std::printf("  the server stopped %.2f s after SIGTERM\n", srv.stop());
    }
    fs::remove_all(dir);
  }
  if (part("heartbeats")) {
    auto dir = test::fresh_temp_dir("heartbeats", o.tmp);
    {
      test::server_process srv{dir / "home", server_env(), launch_for(o, dir)};
      std::printf("\n`cdui start --foreground --port 0` for the heartbeats (pid %d, started in %.2f s)\n",
                  srv.pid(), srv.start_seconds());
      measure_heartbeats(o, srv);
      std::printf("  the server stopped %.2f s after SIGTERM\n", srv.stop());
    }
    fs::remove_all(dir);
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto o = parse_options(argc, argv);
  try {
    return run_bench(o);
  } catch (const std::exception& e) {  // after the destructors stopped every child
    std::fprintf(stderr, "bench_worker: %s\n", e.what());
    return 1;
  }
}
