// The admission policy with a worker away (docs/benchmarks.md, "Device sets across a worker that
// is away"): N device sets across w1/sim:0 and w2/sim:0 are queued while w2 is closed (parked:
// they hold no front), then N single runs on w1/sim:0 behind them, each enqueue followed by an
// admit() as the run queue does; then why_waiting for every single run, and the release of the
// running run with the admit that starts the next. What is timed is the policy alone
// (actors/policy/admission.hpp), on one thread; nothing else runs.
//
//   bench_admission [--runs N]     (default 10000)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "actors/policy/admission.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

} // namespace

int main(int argc, char** argv) {
  int runs = 10000;
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--runs") == 0)
      runs = std::atoi(argv[i + 1]);
  cdui::policy::admission a;
  a.set_limit("w1/sim:0", 1);
  a.set_limit("w2/sim:0", 1);
  a.enqueue("busy", {"w1/sim:0"});
  (void)a.admit();
  a.set_open("w2/sim:0", false);  // w2 is away
  auto start = clock_type::now();
  for (int i = 0; i < runs; ++i) {
    a.enqueue("set" + std::to_string(i), {"w1/sim:0", "w2/sim:0"});
    (void)a.admit();
  }
  std::printf("enqueue + admit, %d device sets across w1 and w2 (away): %.1f ms\n", runs, ms_since(start));
  start = clock_type::now();
  for (int i = 0; i < runs; ++i) {
    a.enqueue("one" + std::to_string(i), {"w1/sim:0"});
    (void)a.admit();
  }
  std::printf("enqueue + admit, %d single runs on w1/sim:0 behind them: %.1f ms\n", runs, ms_since(start));
  start = clock_type::now();
  for (int i = 0; i < runs; ++i)
    (void)a.why_waiting("one" + std::to_string(i));
  std::printf("why_waiting of the %d single runs: %.1f ms\n", runs, ms_since(start));
  start = clock_type::now();
  a.release("busy");
  auto started = a.admit();
  std::printf("release + admit: %.3f ms, started %s\n", ms_since(start),
              started.empty() ? "nothing" : started.front().c_str());
  return started.size() == 1 && started.front() == "one0" ? 0 : 1;
}
