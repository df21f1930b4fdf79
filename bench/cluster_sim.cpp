// cluster_sim: what sharing cards by memory buys on a cluster, measured by replaying a job trace
// on the real scheduling policy with simulated time (sim/, docs/benchmarks.md "A cluster
// simulator on the scheduling policy").
//   Compare (the default): one trace, each policy in turn (Exclusive; shared by memory with typed,
//     measured, ±10% and ±30% estimated budgets) on a fresh simulator; prints a Markdown table of
//     each policy's figures and the wall time of its replay. Timed: the replay alone (load() to the
//     last step()), not drawing the trace.
//   --check: each policy replayed twice, placing runs for any worker through the simulator's index
//     and literally as the run queue does (policy::free_slots over every worker, the ledger over
//     every idle shared card, each floating run at each pump); the two schedules must be the same,
//     start for start. Use on small clusters: the literal replay costs O(floating runs x cards).
//   --scaling: the cost of a decision with a standing queue: for each card count and queue length,
//     a trace of small runs all submitted at t=0, as many as fill the cluster and leave the queue
//     waiting; then --steps ends are timed, each letting runs start (µs per run started). Then one
//     pass of the run queue's place_floating as it is written (simulator::literal_pass, every
//     floating run asked, as after memory frees) over at most --literal-runs of the queue, timed
//     per floating run; the run queue makes such a pass at every pump, so a pump with the whole
//     queue costs that times its length.
//   --write-pai DIR: writes the trace as PAI tables (sim/pai_trace.hpp) instead of replaying it.
// Usage: cluster_sim [--cluster 1000x8x80] [--trace small|mix|bursts|whole|pai:DIR] [--jobs 100000]
//                    [--load 1.0] [--seed 1] [--policies exclusive,typed,measured,estimate10,estimate30]
//                    [--context-mib 768] [--sets named|any] [--oom card-full|cap] [--no-heartbeat]
//                    [--literal] [--check] [--json FILE] [--write-pai DIR]
//                    [--scaling [--cards 800,8000,64000] [--queued 1000,10000,100000] [--steps 20000]
//                     [--literal-runs 200]]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/run_request.hpp"
#include "sim/pai_trace.hpp"
#include "sim/simulator.hpp"
#include "sim/trace_shapes.hpp"

namespace {

using namespace cdui::sim;
using clock_type = std::chrono::steady_clock;

struct args {
  std::string cluster = "1000x8x80";
  std::string trace = "small";
  std::size_t jobs = 100000;
  double load = 1.0;
  std::uint64_t seed = 1;
  std::string policies = "exclusive,typed,measured,estimate10,estimate30";
  sim_options options;
  bool check = false;
  bool scaling = false;
  std::string json;
  std::string write_pai;
  std::string cards = "800,8000,64000";
  std::string queued = "1000,10000,100000";
  std::size_t steps = 20000;
  std::size_t literal_runs = 200;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "cluster_sim: " << why << "\n(see the usage in bench/cluster_sim.cpp)\n";
  std::exit(2);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in{text};
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty())
      out.push_back(part);
  return out;
}

args parse(int argc, char** argv) {
  args a;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--cluster") a.cluster = value();
    else if (flag == "--trace") a.trace = value();
    else if (flag == "--jobs") a.jobs = std::stoull(value());
    else if (flag == "--load") a.load = std::stod(value());
    else if (flag == "--seed") a.seed = std::stoull(value());
    else if (flag == "--policies") a.policies = value();
    else if (flag == "--context-mib") a.options.context_bytes = std::stoll(value()) << 20;
    else if (flag == "--sets") a.options.sets_named = value() == "named";
    else if (flag == "--oom") a.options.oom = value() == "cap" ? sim_options::oom_rule::cap : sim_options::oom_rule::card_full;
    else if (flag == "--no-heartbeat") a.options.free_from_usage = false;
    else if (flag == "--literal") a.options.literal = true;
    else if (flag == "--check") a.check = true;
    else if (flag == "--scaling") a.scaling = true;
    else if (flag == "--json") a.json = value();
    else if (flag == "--write-pai") a.write_pai = value();
    else if (flag == "--cards") a.cards = value();
    else if (flag == "--queued") a.queued = value();
    else if (flag == "--steps") a.steps = std::stoull(value());
    else if (flag == "--literal-runs") a.literal_runs = std::stoull(value());
    else usage("unknown flag " + flag);
  }
  a.options.seed = a.seed;
  return a;
}

cluster_spec cluster_of(const std::string& text) {
  auto parsed = cluster_spec::parse(text);
  if (auto* why = std::get_if<std::string>(&parsed))
    usage(*why);
  return std::get<cluster_spec>(parsed);
}

std::vector<policy_spec> policies_of(const std::string& text) {
  std::vector<policy_spec> out;
  for (const auto& name : split(text)) {
    auto p = policy_named(name);
    if (!p)
      usage("no policy '" + name + "' (exclusive, typed, measured, estimate10, estimate30)");
    out.push_back(*p);
  }
  return out;
}

trace trace_of(const args& a, const cluster_spec& cluster) {
  if (a.trace.rfind("pai:", 0) == 0) {
    auto read = read_pai(a.trace.substr(4));
    if (auto* why = std::get_if<std::string>(&read))
      usage(*why);
    const auto& pai = std::get<pai_trace>(read);
    std::cerr << "PAI trace: " << pai.jobs.size() << " jobs kept; skipped " << pai.not_terminated
              << " not Terminated, " << pai.no_gpu << " without a GPU task, " << pai.no_memory_figure
              << " without a GPU memory figure\n";
    return pai.jobs;
  }
  auto shape = trace_shape_named(a.trace);
  if (!shape)
    usage("no trace shape '" + a.trace + "' (small, mix, bursts, whole, pai:DIR)");
  return generate({*shape, a.jobs, a.load, a.seed}, cluster);
}

std::string hours(std::int64_t s) {
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%lld s", static_cast<long long>(s));
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%.1f min", static_cast<double>(s) / 60);
  else
    std::snprintf(buf, sizeof buf, "%.1f h", static_cast<double>(s) / 3600);
  return buf;
}

std::string percent(double v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", v * 100);
  return buf;
}

nlohmann::json json_of(const summary& s, double seconds) {
  return {{"policy", s.policy},       {"jobs", s.jobs},
          {"done", s.done},           {"oom", s.oom},
          {"over_budget", s.over_budget}, {"refused", s.refused},
          {"never_started", s.never_started}, {"memory_used", s.memory_used},
          {"cards_busy", s.cards_busy}, {"wait_p50", s.wait_p50},
          {"wait_p99", s.wait_p99},   {"makespan", s.makespan},
          {"sets", s.sets},           {"set_wait_p50", s.set_wait_p50},
          {"set_wait_p99", s.set_wait_p99}, {"set_wait_max", s.set_wait_max},
          {"sets_never_started", s.sets_never_started}, {"decisions", s.decisions},
          {"card_verdicts", s.card_verdicts}, {"replay_seconds", seconds}};
}

void print_header() {
  std::cout << "| policy | memory used | cards busy | wait p50 | wait p99 | makespan | OOM | over budget"
               " | refused | sets: wait p50 / p99 / max | sets never started | replay s | jobs/s |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
}

void print_row(const summary& s, double seconds) {
  std::cout << "| " << s.policy << " | " << percent(s.memory_used) << " | " << percent(s.cards_busy) << " | "
            << hours(s.wait_p50) << " | " << hours(s.wait_p99) << " | " << hours(s.makespan) << " | " << s.oom
            << " | " << s.over_budget << " | " << s.refused << " | " << hours(s.set_wait_p50) << " / "
            << hours(s.set_wait_p99) << " / " << hours(s.set_wait_max) << " | " << s.sets_never_started
            << " | " << seconds << " | " << static_cast<long long>(static_cast<double>(s.jobs) / seconds)
            << " |\n"
            << std::flush;
}

int compare(const args& a) {
  auto cluster = cluster_of(a.cluster);
  auto jobs = trace_of(a, cluster);
  if (!a.write_pai.empty()) {
    write_pai(a.write_pai, jobs, a.seed);
    std::cout << "wrote " << jobs.size() << " jobs as PAI tables in " << a.write_pai << "\n";
    return 0;
  }
  std::cout << "cluster " << cluster.text() << " (" << cluster.cards() << " cards), trace " << a.trace << " ("
            << jobs.size() << " jobs, load " << a.load << ", seed " << a.seed << "), context "
            << (a.options.context_bytes >> 20) << " MiB, sets " << (a.options.sets_named ? "named" : "any")
            << ", OOM " << (a.options.oom == sim_options::oom_rule::cap ? "cap" : "card-full")
            << (a.options.free_from_usage ? "" : ", no heartbeat") << (a.options.literal ? ", literal" : "") << "\n\n";
  print_header();
  nlohmann::json out = {{"cluster", cluster.text()}, {"trace", a.trace}, {"jobs", jobs.size()},
                        {"load", a.load}, {"seed", a.seed}, {"policies", nlohmann::json::array()}};
  bool same = true;
  for (const auto& policy : policies_of(a.policies)) {
    auto began = clock_type::now();
    simulator sim{cluster, policy, a.options};
    sim.load(jobs);
    sim.run();
    double seconds = std::chrono::duration<double>(clock_type::now() - began).count();
    auto s = sim.result();
    print_row(s, seconds);
    out["policies"].push_back(json_of(s, seconds));
    if (!a.check)
      continue;
    auto literal = a.options;
    literal.literal = !a.options.literal;
    simulator other{cluster, policy, literal};
    other.load(jobs);
    other.run();
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const auto& x = sim.outcomes()[i];
      const auto& y = other.outcomes()[i];
      if (x.how != y.how || x.start != y.start || x.end != y.end || x.card != y.card) {
        std::cout << "  " << policy.name << ": job " << i << " differs: start " << x.start << " vs " << y.start
                  << ", card " << x.card << " vs " << y.card << "\n";
        same = false;
        break;
      }
    }
  }
  if (a.check)
    std::cout << "\nindexed and literal placement: " << (same ? "the same schedule" : "DIFFERENT schedules") << "\n";
  if (!a.json.empty())
    std::ofstream{a.json} << out.dump(2) << "\n";
  return same ? 0 : 1;
}

/// Submits at t=0 as many small runs as fill the cluster and leave `queued` plus half the timed
/// ends waiting, then times min(--steps, queued) ends: the queue is `queued` long on average.
nlohmann::json scale_point(const policy_spec& policy, std::size_t cards, std::size_t queued, const args& a) {
  const auto steps = std::min(a.steps, queued);
  cluster_spec cluster{{{static_cast<int>(cards / 8), 8, static_cast<std::int64_t>(80 * cdui::bytes_per_gib)}}};
  auto options = a.options;
  options.literal = false;
  // Enough runs: a card holds about 10 small runs' budgets at most.
  auto jobs = generate({trace_shape::small, cards * 12 + queued + steps, 1.0, a.seed}, cluster);
  for (auto& j : jobs)
    j.arrival = 0;
  // How many submits leave the queue that long.
  std::size_t submits = 0;
  {
    simulator probe{cluster, policy, options};
    probe.load(jobs);
    while (probe.queued() < queued + steps / 2 && submits < jobs.size() && probe.step())
      ++submits;
  }
  jobs.resize(submits);
  simulator sim{cluster, policy, options};
  sim.load(jobs);
  auto began = clock_type::now();
  for (std::size_t i = 0; i < submits; ++i)
    sim.step();
  double fill = std::chrono::duration<double>(clock_type::now() - began).count();
  auto queued_before = sim.queued();
  auto running = sim.running();
  auto started_before = sim.result().decisions;
  began = clock_type::now();
  for (std::size_t i = 0; i < steps && sim.step(); ++i) {
  }
  double seconds = std::chrono::duration<double>(clock_type::now() - began).count();
  auto decisions = sim.result().decisions - started_before;
  auto queued_after = sim.queued();
  // One pass of place_floating as the run queue makes it, over at most literal_runs floating runs.
  double literal_per_run = 0;
  std::size_t literal_runs = 0;
  if (a.literal_runs > 0) {
    began = clock_type::now();
    literal_runs = std::min(a.literal_runs, sim.queued());
    sim.literal_pass(literal_runs);
    literal_per_run = std::chrono::duration<double>(clock_type::now() - began).count()
                      / static_cast<double>(std::max<std::size_t>(1, literal_runs));
  }
  nlohmann::json row = {{"policy", policy.name}, {"cards", cards}, {"queued", queued},
                        {"queued_from", queued_before}, {"queued_to", queued_after},
                        {"running", running}, {"fill_seconds", fill}, {"steps", steps},
                        {"decisions", decisions}, {"seconds", seconds},
                        {"us_per_decision", seconds * 1e6 / static_cast<double>(std::max<std::uint64_t>(1, decisions))},
                        {"literal_runs", literal_runs}, {"literal_ms_per_run", literal_per_run * 1e3},
                        {"literal_pump_seconds", literal_per_run * static_cast<double>(queued)}};
  std::cout << "| " << policy.name << " | " << cards << " | " << queued << " (" << queued_before << " to "
            << queued_after << ") | " << running << " | "
            << row["us_per_decision"].get<double>() << " | " << decisions << " in " << seconds << " s | "
            << row["literal_ms_per_run"].get<double>() << " | " << row["literal_pump_seconds"].get<double>()
            << " |\n"
            << std::flush;
  return row;
}

int scaling(const args& a) {
  std::cout << "| policy | cards | queued | running | indexed µs per decision | decisions timed | literal ms per "
               "floating run | literal pump with the whole queue (s) |\n|---|---|---|---|---|---|---|---|\n";
  nlohmann::json out = nlohmann::json::array();
  for (const auto& policy : policies_of(a.policies))
    for (const auto& cards : split(a.cards))
      for (const auto& queued : split(a.queued))
        out.push_back(scale_point(policy, std::stoull(cards), std::stoull(queued), a));
  if (!a.json.empty())
    std::ofstream{a.json} << out.dump(2) << "\n";
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto a = parse(argc, argv);
  if (a.scaling) {
    if (a.policies == args{}.policies)
      a.policies = "exclusive,measured";
    return scaling(a);
  }
  return compare(a);
}
