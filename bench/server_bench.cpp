// The run queue's speed from the inside out, measured side by side in one run:
//   1. the admission policy alone (policy::admission, plain C++): --runs run ids spread round robin
//      over --devices keys sim:0..sim:N-1 (limit 1 each, as accelerators have) are enqueued, then
//      the oldest running run is released and admit() called, one run at a time as the run queue's
//      `ended` handler does, until every run has been admitted. Timed: the enqueues and the whole
//      admit/release loop (the ids and key lists are built before the clock starts). decisions/s =
//      admitted runs / those seconds; goal >= 100,000/s. Once with single-device runs only, once
//      with every 20th run (5%) a device set of 2 keys, which takes the reservation path.
//   2. the whole in-process submit path: cdui::server on a temp home with --devices sim cards,
//      --submits submits of a one-node graph (Dataset moons, 16 samples) spread round robin over
//      the sim devices. Timed: the submit() calls only, which validate the graph and insert the
//      SQLite row (the run folder is made when the run starts, since issue 16); the runs execute
//      (a few ms each, making their folders) on the CAF threads meanwhile and are waited for after
//      the clock stops. Graph validation, a run folder and the SQLite insert are then timed alone,
//      to show what each costs.
//      Then the submit path into a queue, without runs executing beside it: a run on sim:0 holds
//      the card without taking CPU (a server that runs each run as a `cdui exec` process, the
//      blocker's process stopped with SIGSTOP), and --submits submits on sim:0 queue behind it,
//      first from one client thread, then from 4 at once (their submits share commits). Timed: the
//      first submit to the last answer. Goal >= 5,000 submits/s (issue 16).
//   6. a grid sweep of --sweep-variants variants (Dataset n_samples 16, 17, ...) through
//      server::submit_sweep, every run on sim:0 behind the same stopped blocker, so they stay
//      queued. Timed: the call, which validates every variant, records them in one transaction and
//      queues them, until its answer. Goal < 2 s for 10,000 variants (issue 16). Then its cancel,
//      until every child has ended and the sweep is cancelled.
//   3. over HTTP on loopback: the real `cdui start --foreground --port 0` on a temp home; --posts
//      POST /api/runs of the same graph on sim devices through one keep-alive cpp-httplib Client,
//      first as the client comes, then with TCP_NODELAY on its socket. Timed: each request from
//      send to parsed answer; p50/p99/max latency. cpp-httplib writes headers and body in separate
//      send()s, so a side without TCP_NODELAY waits for the peer's delayed ACK (~40 ms); `cdui
//      start` sets it on its sockets, and the two client passes show what a client's own setting
//      still costs.
//   5. the memory ledger with its messages: a memory_ledger actor with --cards
//      device slots (cards of 16 GiB shared by memory, figures reported), and --ledger-runs asks of
//      1 GiB each, round robin over the cards, from a driver actor that keeps 64 asks in flight
//      and releases each granted run at once, as the run queue asks for the runs at the fronts of
//      its shared cards. Timed: the first ask to the last answer. decisions/s = answers / seconds;
//      goal >= 100,000/s (issue 12).
//   4. the cost per run of each isolation: two embedded cdui::server on temp homes, one executing
//      runs on threads (the default), one as `cdui exec --pipe` processes (--isolation process,
//      the --cdui binary), --isolated runs each of a small training graph (moons, 256 samples,
//      one epoch of 8 batches), one run at a time, alternating between the two so that both see
//      the same machine. Timed: submit() to wait() returning, per run; p50 and mean, and the
//      process/thread difference, which is what a process costs a run (fork, exec, loading
//      libtorch, reading the graph again).
// Usage: bench_server [--runs 10000] [--devices 64] [--rounds 7] [--submits 500] [--posts 300]
//                     [--isolated 20] [--cdui PATH] [--cards 1000] [--ledger-runs 100000]
//                     [--sweep-variants 10000]
//                     [--only admission|submit|queued|http|isolation|ledger|sweep]
// (--only queued: part 2's submits into a queue alone)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "actors/policy/admission.hpp"
#include "actors/server/memory_ledger.hpp"
#include "actors/server/server.hpp"
#include "apps/http_api.hpp"
#include "runtime/validate.hpp"
#include "storage/run_directory.hpp"
#include "storage/run_store.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"
#include "testkit/server_process.hpp"

using nlohmann::json;
using namespace cdui;
namespace fs = std::filesystem;
using bench_clock = std::chrono::steady_clock;

namespace {

/// The goal for the admission policy alone.
constexpr double admission_goal_per_second = 100'000;
/// Issue 16's goals: plain submits per second, and the seconds a 10,000-variant sweep may take.
constexpr double submit_goal_per_second = 5'000;
constexpr double sweep_goal_seconds = 2;
/// Client threads that submit at once in the concurrent pass.
constexpr int submit_threads = 4;
/// One run in this many is a device set of 2 keys in the mixed measurement (5%).
constexpr int device_set_every = 20;
/// How long the server started in part 3 gets to stop after SIGTERM.
constexpr auto server_stop_timeout = std::chrono::seconds(30);

struct options {
  int runs = 10'000;
  int devices = 64;
  int cards = 1000;
  int ledger_runs = 100'000;
  int rounds = 7;
  int submits = 500;
  int posts = 300;
  int isolated = 20;
  int sweep_variants = 10'000;
  std::string cdui = CDUI_BINARY;
  /// admission, submit, queued, http, ...: only that part (to profile one); empty: all.
  std::string only;
};

options parse_options(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_server: %s needs a value\n", flag.c_str());
      std::exit(2);
    }
    std::string value = argv[++i];
    auto number = [&] {
      char* end = nullptr;
      auto n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0') {
        std::fprintf(stderr, "bench_server: %s needs a number, not '%s'\n", flag.c_str(), value.c_str());
        std::exit(2);
      }
      return static_cast<int>(n);
    };
    if (flag == "--runs")
      o.runs = number();
    else if (flag == "--devices")
      o.devices = number();
    else if (flag == "--cards")
      o.cards = number();
    else if (flag == "--ledger-runs")
      o.ledger_runs = number();
    else if (flag == "--rounds")
      o.rounds = number();
    else if (flag == "--submits")
      o.submits = number();
    else if (flag == "--posts")
      o.posts = number();
    else if (flag == "--isolated")
      o.isolated = number();
    else if (flag == "--sweep-variants")
      o.sweep_variants = number();
    else if (flag == "--cdui")
      o.cdui = value;
    else if (flag == "--only"
             && (value == "admission" || value == "submit" || value == "http" || value == "isolation"
                 || value == "ledger" || value == "sweep" || value == "queued"))
      o.only = value;
    else {
      std::fprintf(stderr, "bench_server: unknown flag %s (known: --runs --devices --rounds "
                           "--submits --posts --isolated --cdui, --only "
                           "admission|submit|queued|http|isolation|ledger|sweep, --cards --ledger-runs "
                           "--sweep-variants)\n", flag.c_str());
      std::exit(2);
    }
  }
  if (o.runs < 1 || o.devices < 2 || o.rounds < 1 || o.submits < 1 || o.posts < 1
      || o.isolated < 1 || o.sweep_variants < 1) {
    std::fprintf(stderr, "bench_server: sizes must be >= 1 (--devices >= 2)\n");
    std::exit(2);
  }
  return o;
}

double seconds_since(bench_clock::time_point start) {
  return std::chrono::duration<double>(bench_clock::now() - start).count();
}

/// CPU seconds this process has used, all threads.
double process_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// The value at fraction `q` of sorted `v` (nearest rank).
double quantile(const std::vector<double>& sorted, double q) {
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size()) - 1e-9));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

std::string sim_key(int i) {
  return "sim:" + std::to_string(i);
}

/// A graph that does as little as a run can: one Dataset node making 16 moons samples.
std::string trivial_graph() {
  return test::dataset_graph_json({{"name", "moons"}, {"n_samples", 16}}).dump();
}

// --- 1. the admission policy ---------------------------------------------------------------------

struct admission_round {
  double enqueue_seconds = 0;
  double admit_seconds = 0;  // the admit/release loop
  [[nodiscard]] double total() const { return enqueue_seconds + admit_seconds; }
};

/// One round: every run enqueued, then release-oldest + admit() until all were admitted.
admission_round admit_all(const std::vector<std::string>& ids,
                          const std::vector<std::vector<std::string>>& keys, int devices) {
  policy::admission policy;
  for (int d = 0; d < devices; ++d)
    policy.set_limit(sim_key(d), 1);
  admission_round r;
  auto start = bench_clock::now();
  for (std::size_t i = 0; i < ids.size(); ++i)
    policy.enqueue(ids[i], keys[i]);
  r.enqueue_seconds = seconds_since(start);

  start = bench_clock::now();
  std::size_t admitted = 0;
  std::deque<std::string> running;
  auto take = [&](std::vector<std::string> now) {
    admitted += now.size();
    for (auto& id : now)
      running.push_back(std::move(id));
  };
  take(policy.admit());
  while (admitted < ids.size()) {
    if (running.empty()) {
      std::fprintf(stderr, "admission stalled after %zu of %zu runs\n", admitted, ids.size());
      std::exit(1);
    }
    policy.release(running.front());
    running.pop_front();
    take(policy.admit());
  }
  r.admit_seconds = seconds_since(start);
  return r;
}

/// Each round's decisions/s and their median against the goal.
void print_decision_rounds(const char* what, const std::vector<double>& rates) {
  auto m = median(rates);
  std::printf("  rounds (decisions/s):");
  for (auto r : rates)
    std::printf(" %.0f", r);
  std::printf("\n  %s decisions/s: median %.0f (goal >= %.0f: %s, %.1fx)\n", what, m,
              admission_goal_per_second, m >= admission_goal_per_second ? "met" : "NOT met",
              m / admission_goal_per_second);
}

/// Runs `rounds` rounds over the given runs and prints the median decisions/s.
void measure_admission(const char* label, const options& o, int set_every) {
  std::vector<std::string> ids;
  std::vector<std::vector<std::string>> keys;
  int sets = 0;
  for (int i = 0; i < o.runs; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "%08x", static_cast<unsigned>(i));
    ids.emplace_back(id);
    std::vector<std::string> k{sim_key(i % o.devices)};
    if (set_every > 0 && i % set_every == set_every - 1) {
      k.push_back(sim_key((i + 1) % o.devices));
      ++sets;
    }
    keys.push_back(std::move(k));
  }
  std::vector<double> rates, enqueue_us, admit_us;
  for (int round = 0; round < o.rounds; ++round) {
    auto r = admit_all(ids, keys, o.devices);
    rates.push_back(static_cast<double>(o.runs) / r.total());
    enqueue_us.push_back(r.enqueue_seconds * 1e6 / o.runs);
    admit_us.push_back(r.admit_seconds * 1e6 / o.runs);
  }
  std::printf("%s (%d runs, %d of them device sets of 2, over %d devices)\n", label, o.runs, sets,
              o.devices);
  print_decision_rounds("admission", rates);
  std::printf("  per run, median: enqueue %.2f us, release + admit %.2f us\n", median(enqueue_us),
              median(admit_us));
}

// --- 2. the in-process submit path ---------------------------------------------------------------

run_request trivial_request(const std::string& graph, int i, int devices) {
  run_request r;
  r.graph_json = graph;
  r.device = sim_key(i % devices);
  return r;
}

void measure_submit(const options& o) {
  auto home = test::fresh_temp_dir("server");
  auto graph = trivial_graph();
  std::vector<std::string> ids;
  double submit_seconds = 0, submit_cpu_seconds = 0, drain_seconds = 0;
  std::vector<double> latency_ms;
  {
    server::config cfg;
    cfg.home = home;
    cfg.sim_devices = std::to_string(o.devices) + "x1GiB";
    cdui::server srv{cfg};
    // One untimed submit first: the actor system, the store and the node registry warm up.
    auto warm = srv.submit(trivial_request(graph, 0, o.devices));
    if (!warm.ok()) {
      std::fprintf(stderr, "submit refused: %s\n", warm.error.c_str());
      std::exit(1);
    }
    (void)srv.wait(warm.run_id);

    auto cpu = process_cpu_seconds();
    auto start = bench_clock::now();
    for (int i = 0; i < o.submits; ++i) {
      auto one = bench_clock::now();
      auto result = srv.submit(trivial_request(graph, i, o.devices));
      latency_ms.push_back(seconds_since(one) * 1e3);
      if (!result.ok()) {
        std::fprintf(stderr, "submit %d refused: %s\n", i, result.error.c_str());
        std::exit(1);
      }
      ids.push_back(result.run_id);
    }
    submit_seconds = seconds_since(start);
    submit_cpu_seconds = process_cpu_seconds() - cpu;

    start = bench_clock::now();
    int succeeded = 0;
    for (const auto& id : ids)
      succeeded += srv.wait(id).status == run_status::succeeded;
    drain_seconds = seconds_since(start);
    if (succeeded != o.submits)
      std::printf("  note: %d of %d runs did not succeed\n", o.submits - succeeded, o.submits);
  }
  std::sort(latency_ms.begin(), latency_ms.end());
  std::printf("\nin-process submit path: cdui::server, %d submits of a one-node graph (Dataset moons, "
              "16 samples) round robin over %d sim devices\n", o.submits, o.devices);
  std::printf("  submits/s: %.0f (%.1fx below the policy goal: a submit also validates the graph "
              "and inserts the SQLite row; the runs start beside the submits)\n",
              o.submits / submit_seconds, admission_goal_per_second / (o.submits / submit_seconds));
  std::printf("  submit latency ms: p50 %.3f, p99 %.3f, max %.3f\n", quantile(latency_ms, 0.5),
              quantile(latency_ms, 0.99), latency_ms.back());
  std::printf("  the process used %.2f CPU s in those %.2f s (the runs execute beside the submits); "
              "they took %.2f s more to end after the clock stopped\n",
              submit_cpu_seconds, submit_seconds, drain_seconds);

  // The same steps alone, without the actors or runs beside them.
  auto steps = home / "steps";
  auto per_call_us = [&](const std::function<void(int)>& step) {
    auto start = bench_clock::now();
    for (int i = 0; i < o.submits; ++i)
      step(i);
    return seconds_since(start) * 1e6 / o.submits;
  };
  auto validate_us = per_call_us([&](int) {
    if (!std::holds_alternative<runtime::validated_graph>(runtime::validate_graph(graph)))
      std::exit(1);
  });
  auto folder_us = per_call_us([&](int i) {
    storage::run_directory dir{steps, "f" + std::to_string(i), graph};
  });
  double insert_us = 0;
  {
    storage::run_store store{steps / "cdui.db"};
    insert_us = per_call_us([&](int i) {
      storage::stored_run run;
      run.info.id = "s" + std::to_string(i);
      run.info.queue_key = sim_key(i % o.devices);
      run.graph_json = graph;
      store.insert(run);
    });
  }
  std::printf("  the steps alone, per call: validate_graph %.1f us, run folder (made at the run's "
              "start) %.1f us, SQLite insert %.1f us (sum %.1f us; a submit took %.1f us)\n",
              validate_us, folder_us, insert_us, validate_us + folder_us + insert_us,
              submit_seconds * 1e6 / o.submits);
  fs::remove_all(home);
}

/// The pids of this process's children, from /proc.
std::vector<pid_t> child_pids() {
  std::vector<pid_t> pids;
  auto me = ::getpid();
  for (const auto& entry : fs::directory_iterator{"/proc"}) {
    auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream stat{entry.path() / "stat"};
    std::string line;
    if (!std::getline(stat, line))
      continue;
    // pid (comm) state ppid ...: comm may hold spaces and parentheses; the last ')' ends it.
    auto close = line.rfind(')');
    if (close == std::string::npos)
      continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == me)
      pids.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return pids;
}

/// A run that holds sim:0 without taking CPU, for the queued runs to wait behind: a training run
/// of a server that executes runs as processes (config::run_process_binary), stopped with SIGSTOP
/// once it is running. release() continues and cancels it.
class sim0_blocker {
public:
  explicit sim0_blocker(server& srv) : srv_{srv} {
    run_request blocker;
    blocker.graph_json = test::moons_graph_json(1'000'000, 0, 16, "sim:0").dump();
    auto held = srv.submit(blocker);
    if (!held.ok()) {
      std::fprintf(stderr, "bench_server: the blocker was refused: %s\n", held.error.c_str());
      std::exit(1);
    }
    id_ = held.run_id;
    // Its process is the server's only child once it runs (the runs behind it stay queued).
    auto deadline = bench_clock::now() + std::chrono::seconds(60);
    for (;;) {
      auto info = srv.info(id_);
      auto children = child_pids();
      if (info && info->status == run_status::running && children.size() == 1) {
        pid_ = children.front();
        break;
      }
      if ((info && is_final(info->status)) || bench_clock::now() > deadline) {
        std::fprintf(stderr, "bench_server: the blocker did not start in its own process\n");
        std::exit(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid_, SIGSTOP);
  }
  sim0_blocker(const sim0_blocker&) = delete;
  sim0_blocker& operator=(const sim0_blocker&) = delete;
  ~sim0_blocker() { release(); }

  void release() {
    if (pid_ == 0)
      return;
    ::kill(pid_, SIGCONT);
    pid_ = 0;
    (void)srv_.cancel(id_);
  }

private:
  server& srv_;
  std::string id_;
  pid_t pid_ = 0;
};

/// A server on a temp home with `o.devices` sim cards that executes runs as processes.
server::config blocking_server_config(const options& o, const fs::path& home) {
  server::config cfg;
  cfg.home = home;
  cfg.sim_devices = std::to_string(o.devices) + "x1GiB";
  cfg.run_process_binary = fs::absolute(o.cdui);
  return cfg;
}

/// `n` submits of `graph` on sim:0 from `threads` client threads at once; the seconds from the
/// first submit to the last answer, and each submit's latency (sorted).
struct submit_pass {
  double seconds = 0;
  double cpu_seconds = 0;  // the whole process's, clients and server

  std::vector<double> latency_ms;
};

submit_pass submit_queued(server& srv, const std::string& graph, int n, int threads) {
  std::vector<std::vector<double>> latencies(threads);
  std::vector<std::thread> clients;
  auto cpu = process_cpu_seconds();
  auto start = bench_clock::now();
  for (int t = 0; t < threads; ++t)
    clients.emplace_back([&, t] {
      for (int i = t; i < n; i += threads) {
        run_request r;
        r.graph_json = graph;
        r.device = "sim:0";
        auto one = bench_clock::now();
        auto result = srv.submit(std::move(r));
        latencies[t].push_back(seconds_since(one) * 1e3);
        if (!result.ok()) {
          std::fprintf(stderr, "submit refused: %s\n", result.error.c_str());
          std::exit(1);
        }
      }
    });
  for (auto& c : clients)
    c.join();
  submit_pass p;
  p.seconds = seconds_since(start);
  p.cpu_seconds = process_cpu_seconds() - cpu;
  for (const auto& l : latencies)
    p.latency_ms.insert(p.latency_ms.end(), l.begin(), l.end());
  std::sort(p.latency_ms.begin(), p.latency_ms.end());
  return p;
}

void print_submit_pass(const char* label, int n, const submit_pass& p) {
  auto rate = n / p.seconds;
  std::printf("  %s: %.0f submits/s (goal >= %.0f: %s), latency ms p50 %.3f, p99 %.3f, max %.3f; "
              "CPU %.0f us per submit\n",
              label, rate, submit_goal_per_second, rate >= submit_goal_per_second ? "met" : "NOT met",
              quantile(p.latency_ms, 0.5), quantile(p.latency_ms, 0.99), p.latency_ms.back(),
              p.cpu_seconds * 1e6 / n);
}

void measure_queued_submits(const options& o) {
  auto home = test::fresh_temp_dir("queued");
  auto graph = trivial_graph();
  {
    cdui::server srv{blocking_server_config(o, home)};
    sim0_blocker blocker{srv};
    (void)submit_queued(srv, graph, 20, 1);  // untimed: the store and the node registry warm up
    auto one = submit_queued(srv, graph, o.submits, 1);
    auto many = submit_queued(srv, graph, o.submits, submit_threads);
    std::printf("\nsubmit path into a queue: %d submits each of the one-node graph on sim:0, behind a "
                "run that holds it (nothing executes beside them)\n", o.submits);
    print_submit_pass("one client thread  ", o.submits, one);
    auto label = std::to_string(submit_threads) + " client threads    ";
    print_submit_pass(label.c_str(), o.submits, many);
    blocker.release();
  }  // the embedded server's shutdown cancels the queued runs
  fs::remove_all(home);
}

// --- 6. a sweep's submit ------------------------------------------------------------------------

void measure_sweep(const options& o) {
  auto home = test::fresh_temp_dir("sweep");
  {
    auto cfg = blocking_server_config(o, home);
    cfg.max_sweep_runs = static_cast<std::uint64_t>(o.sweep_variants);
    cdui::server srv{cfg};
    sim0_blocker blocker{srv};
    policy::sweep_request sweep;
    sweep.base.graph_json = trivial_graph();
    sweep.base.device = "sim:0";
    policy::sweep_param samples;
    samples.node = "data";
    samples.param = "n_samples";
    samples.min = 16;
    samples.max = 16 + o.sweep_variants - 1;
    samples.integer = true;
    samples.count = static_cast<std::uint64_t>(o.sweep_variants);
    sweep.spec.params.push_back(samples);
    sweep.objective.metric = "loss";
    auto cpu = process_cpu_seconds();
    auto start = bench_clock::now();
    auto answer = srv.submit_sweep(sweep);
    auto seconds = seconds_since(start);
    auto cpu_seconds = process_cpu_seconds() - cpu;
    if (!answer.ok()) {
      std::fprintf(stderr, "bench_server: the sweep was refused: %s\n", answer.error.c_str());
      std::exit(1);
    }
    std::printf("\nsweep: a grid of %zu variants (Dataset n_samples) through server::submit_sweep, "
                "every run on sim:0 behind a run that holds it\n", answer.run_ids.size());
    std::printf("  validated and queued in %.3f s (%.0f runs/s, %.2f CPU s; goal < %.0f s: %s)\n",
                seconds, answer.run_ids.size() / seconds, cpu_seconds, sweep_goal_seconds,
                seconds < sweep_goal_seconds ? "met" : "NOT met");
    // The cancel: every queued child ends cancelled, and the sweep with them.
    start = bench_clock::now();
    (void)srv.cancel_sweep(answer.sweep_id);
    for (;;) {
      auto record = srv.sweep(answer.sweep_id);
      if (!record || record->state == "cancelled")
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::printf("  cancelled (every child ended, the sweep cancelled) in %.3f s\n", seconds_since(start));
    blocker.release();
  }
  fs::remove_all(home);
}

// --- 3. over HTTP ---------------------------------------------------------------------------------

/// The latencies of one client's POSTs, sorted, and how many answered "queued".
struct post_pass {
  std::vector<double> latency_ms;
  int queued = 0;
};

/// `o.posts` timed POST /api/runs of the trivial graph through one keep-alive client, on sim
/// devices round robin. One untimed POST first opens the connection.
post_pass time_posts(const options& o, int port, const std::string& token, bool tcp_nodelay) {
  httplib::Client client{"127.0.0.1", port};
  client.set_keep_alive(true);
  client.set_tcp_nodelay(tcp_nodelay);
  client.set_read_timeout(std::chrono::seconds(60));
  httplib::Headers auth{{"X-CodefyUI-Token", token}};
  auto graph = json::parse(trivial_graph());
  auto post = [&](int i) {
    json body{{"graph", graph}, {"options", {{"device", sim_key(i % o.devices)}}}};
    auto res = client.Post("/api/runs", auth, body.dump(), "application/json");
    if (!res || res->status != 200) {
      std::fprintf(stderr, "POST /api/runs %d: %s\n", i,
                   res ? (std::to_string(res->status) + " " + res->body).c_str()
                       : httplib::to_string(res.error()).c_str());
      std::exit(1);
    }
    return json::parse(res->body);
  };
  (void)post(0);
  post_pass p;
  for (int i = 0; i < o.posts; ++i) {
    auto one = bench_clock::now();
    auto answer = post(i);
    p.latency_ms.push_back(seconds_since(one) * 1e3);
    p.queued += answer["status"] == "queued";
  }
  // Closed before the server is stopped: an idle keep-alive connection would hold the server's
  // stop for its keep-alive timeout (5 s in cpp-httplib 0.11).
  client.stop();
  std::sort(p.latency_ms.begin(), p.latency_ms.end());
  return p;
}

void print_pass(const char* label, const post_pass& p) {
  const auto& ms = p.latency_ms;
  double sum = 0;
  for (auto x : ms)
    sum += x;
  std::printf("  %s: latency ms p50 %.3f, p99 %.3f, max %.3f (%.0f posts/s; %d answered queued)\n",
              label, quantile(ms, 0.5), quantile(ms, 0.99), ms.back(),
              static_cast<double>(ms.size()) * 1e3 / sum, p.queued);
}

void measure_http(const options& o) {
  if (::access(o.cdui.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "bench_server: %s is not an executable cdui (use --cdui PATH)\n",
                 o.cdui.c_str());
    std::exit(1);
  }
  auto dir = test::fresh_temp_dir("http");
  auto sim = std::to_string(o.devices) + "x1GiB";
  test::server_launch launch;
  launch.binary = o.cdui;
  launch.log = dir / "cdui.log";
  launch.stop_timeout = server_stop_timeout;
  test::server_process proc{dir / "home", {{"CODEFYUI_SIM_DEVICES", sim}}, launch};
  auto start_seconds = proc.start_seconds();
  auto plain = time_posts(o, proc.port(), proc.token(), false);
  auto nodelay = time_posts(o, proc.port(), proc.token(), true);
  auto stop_seconds = proc.stop();
  std::printf("\nHTTP on loopback: `cdui start --foreground --port 0` (%s, %s sim devices, started "
              "in %.2f s), %d POST /api/runs per client, one keep-alive client at a time\n",
              o.cdui.c_str(), sim.c_str(), start_seconds, o.posts);
  print_pass("client as it comes (Nagle on)", plain);
  print_pass("client with TCP_NODELAY      ", nodelay);
  std::printf("  the server stopped %.2f s after SIGTERM\n", stop_seconds);
  fs::remove_all(dir);
}

// --- 4. the cost per run of each isolation --------------------------------------------------------

/// A small training run: what a run costs beyond its training shows against it.
run_request small_training_run() {
  test::moons_options small;
  small.samples = 256;
  small.max_steps = std::nullopt;
  small.device = std::nullopt;  // the run's
  run_request r;
  r.graph_json = test::moons_graph_json(small).dump();
  r.device = "cpu";
  r.has_seed = true;
  r.seed = 1;
  return r;
}

void print_run_times(const char* label, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  double sum = 0;
  for (auto x : ms)
    sum += x;
  std::printf("  %s: per run ms p50 %.1f, mean %.1f, min %.1f, max %.1f\n", label,
              quantile(ms, 0.5), sum / static_cast<double>(ms.size()), ms.front(), ms.back());
}

void measure_isolation(const options& o) {
  if (::access(o.cdui.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "bench_server: %s is not an executable cdui (use --cdui PATH)\n",
                 o.cdui.c_str());
    std::exit(1);
  }
  auto dir = test::fresh_temp_dir("isolation");
  server::config threads;
  threads.home = dir / "threads";
  server::config processes;
  processes.home = dir / "processes";
  processes.run_process_binary = fs::absolute(o.cdui);
  server on_threads{threads};
  server in_processes{processes};
  auto one_run = [](server& srv) {
    auto start = bench_clock::now();
    auto submitted = srv.submit(small_training_run());
    if (!submitted.ok()) {
      std::fprintf(stderr, "bench_server: submit refused: %s\n", submitted.error.c_str());
      std::exit(1);
    }
    auto info = srv.wait(submitted.run_id);
    if (info.status != run_status::succeeded) {
      std::fprintf(stderr, "bench_server: run %s ended %s: %s\n", info.id.c_str(),
                   std::string{to_string(info.status)}.c_str(), info.error.c_str());
      std::exit(1);
    }
    return seconds_since(start) * 1e3;
  };
  (void)one_run(on_threads);  // untimed: libtorch's first use in this process
  (void)one_run(in_processes);
  std::vector<double> thread_ms;
  std::vector<double> process_ms;
  for (int i = 0; i < o.isolated; ++i) {
    thread_ms.push_back(one_run(on_threads));
    process_ms.push_back(one_run(in_processes));
  }
  std::printf("\nisolation: %d runs each of a small training graph (moons 256, 8 batches), one at "
              "a time, alternating; submit() to wait()\n", o.isolated);
  print_run_times("thread (default)     ", thread_ms);
  print_run_times("process (cdui exec)  ", process_ms);
  std::sort(thread_ms.begin(), thread_ms.end());
  std::sort(process_ms.begin(), process_ms.end());
  std::printf("  a process costs a run %.1f ms more at the median (x%.1f)\n",
              quantile(process_ms, 0.5) - quantile(thread_ms, 0.5),
              quantile(process_ms, 0.5) / quantile(thread_ms, 0.5));
  fs::remove_all(dir);
}

// --- 5. the memory ledger with its messages -------------------------------------------------------

/// Asks `runs` budgets of the ledger, `in_flight` at a time, releasing each granted one; answers
/// its caller (the seconds) once every ask was answered.
caf::behavior ledger_driver(caf::event_based_actor* self, actors::memory_ledger_actor ledger, int runs,
                            int cards, caf::actor done) {
  struct state_t {
    int sent = 0;
    int answered = 0;
    int granted = 0;
    bench_clock::time_point start = bench_clock::now();
  };
  auto st = std::make_shared<state_t>();
  auto ask = std::make_shared<std::function<void()>>();
  *ask = [=] {
    if (st->sent == runs)
      return;
    auto i = st->sent++;
    auto id = std::to_string(i);
    std::vector<std::string> keys{"w/sim:" + std::to_string(i % cards)};
    self->request(ledger, std::chrono::seconds(30), atoms::ask::value,
                  memory_ask{id, std::int64_t{1} << 30, keys, false, false, false})
      .then([=](memory_answer& a) {
        if (a.kind == 0) {
          ++st->granted;
          self->send(ledger, atoms::released::value, id);
        }
        if (++st->answered == runs) {
          self->send(done, seconds_since(st->start), st->granted);
          self->quit();
          return;
        }
        (*ask)();
      });
  };
  for (int i = 0; i < 64; ++i)
    (*ask)();
  return {[](caf::unit_t) {}};
}

void measure_ledger(const options& o) {
  caf::actor_system_config cfg;
  cfg.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system system{cfg};
  auto ledger = system.spawn(actors::memory_ledger, actors::memory_ledger_config{});
  caf::scoped_actor self{system};
  for (int c = 0; c < o.cards; ++c) {
    auto key = "w/sim:" + std::to_string(c);
    self->request(ledger, std::chrono::seconds(30), atoms::share::value, card_share{key, key, key, 0, "", {}, {}, true})
      .receive([](bool) {}, [](caf::error&) {});
    caf::anon_send(ledger, atoms::report::value, key, std::int64_t{16} << 30, std::int64_t{16} << 30);
  }
  std::vector<double> rates;
  for (int round = 0; round < o.rounds; ++round) {
    system.spawn(ledger_driver, ledger, o.ledger_runs, o.cards, caf::actor_cast<caf::actor>(self));
    self->receive([&](double seconds, int granted) {
      if (granted != o.ledger_runs)
        std::fprintf(stderr, "ledger: only %d of %d asks granted\n", granted, o.ledger_runs);
      rates.push_back(o.ledger_runs / seconds);
    });
  }
  std::printf("memory ledger with its messages (%d runs over %d shared cards, 64 asks in flight)\n",
              o.ledger_runs, o.cards);
  print_decision_rounds("ledger", rates);
  caf::anon_send_exit(ledger, caf::exit_reason::user_shutdown);
}

int run_bench(const options& o) {
  auto part = [&](const char* name) { return o.only.empty() || o.only == name; };
  if (part("admission")) {
    std::printf("admission policy alone: enqueue all, then release the oldest running run and "
                "admit(), one at a time, until all were admitted; %d rounds\n", o.rounds);
    measure_admission("single-device runs", o, 0);
    measure_admission("5% device-set runs", o, device_set_every);
  }
  if (part("submit"))
    measure_submit(o);
  if (part("submit") || o.only == "queued")
    measure_queued_submits(o);
  if (part("sweep"))
    measure_sweep(o);
  if (part("http"))
    measure_http(o);
  if (part("isolation"))
    measure_isolation(o);
  if (part("ledger"))
    measure_ledger(o);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto o = parse_options(argc, argv);
  try {
    return run_bench(o);
  } catch (const std::exception& e) {  // after the destructors stopped every child
    std::fprintf(stderr, "bench_server: %s\n", e.what());
    return 1;
  }
}
