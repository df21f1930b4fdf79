#include "apps/fit_command.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "apps/run_command.hpp"
#include "devices/memory.hpp"
#include "runtime/fit.hpp"

namespace cdui::apps {

namespace {

/// The card `--throughput` probes on without --memory: large enough that nothing runs out.
constexpr std::int64_t unlimited_card_bytes = 1LL << 40;

std::string peak_text(const runtime::fit_probe& p) {
  return p.fits ? devices::format_bytes(p.peak_bytes) : "out of memory";
}

/// A row of the search's table, printed as each probe ends.
void print_probe(const runtime::fit_probe& p) {
  std::printf("%12lld  %s", static_cast<long long>(p.batch_size), peak_text(p).c_str());
  if (p.accumulate_steps > 1)
    std::printf("  with accumulate_steps %lld", static_cast<long long>(p.accumulate_steps));
  std::printf("\n");
  std::fflush(stdout);
}

/// The throughput table at `batches`, one row as each is measured.
void print_throughput(const runtime::validated_graph& graph, std::int64_t card_bytes,
                      const std::vector<std::int64_t>& batches) {
  std::printf("throughput: %lld warm-up steps, then as many steps as fit in one second, at each "
              "batch size\n", static_cast<long long>(runtime::throughput_warmup_steps));
  std::printf("%12s  %-14s %s\n", "batch_size", "peak", "samples/s");
  (void)runtime::fit_throughput(graph, card_bytes, batches, 1.0, [](const runtime::fit_probe& p) {
    if (p.fits)
      std::printf("%12lld  %-14s %.0f\n", static_cast<long long>(p.batch_size), peak_text(p).c_str(),
                  p.samples_per_s);
    else
      std::printf("%12lld  %s\n", static_cast<long long>(p.batch_size), peak_text(p).c_str());
    std::fflush(stdout);
  });
}

/// The batch sizes of the search's probes that fit with one batch per step, ascending.
std::vector<std::int64_t> fitting_batches(const runtime::fit_report& report) {
  std::vector<std::int64_t> out;
  for (const auto& p : report.probes)
    if (p.fits && p.accumulate_steps == 1)
      out.push_back(p.batch_size);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int search(const runtime::validated_graph& graph, std::int64_t bytes, const fit_options& o) {
  std::printf("fitting under %s: each probe trains past its first optimizer step, on a simulated "
              "card of that size\n", devices::format_bytes(bytes).c_str());
  std::printf("%12s  %s\n", "batch_size", "peak");
  auto report = runtime::fit_batch_size(graph, bytes, print_probe);
  if (report.largest_batch == 0) {
    std::printf("not even batch_size 1 fits under %s: make the model smaller or give it more "
                "memory\n", o.memory.c_str());
    return exit_run_failed;
  }
  std::printf("largest batch_size that fits: %lld\n", static_cast<long long>(report.largest_batch));
  if (report.suggested_batch == 0) {
    std::printf("no batch_size trains under %s with the accumulate_steps that the effective batch "
                "of %lld needs\n", o.memory.c_str(),
                static_cast<long long>(report.intended_effective_batch));
    return exit_run_failed;
  }
  std::printf("suggestion: %s.batch_size %lld with %s.accumulate_steps %lld %s the effective batch "
              "of %lld (it trained with a peak of %s)\n",
              report.loader_node.c_str(), static_cast<long long>(report.suggested_batch),
              report.loop_node.c_str(), static_cast<long long>(report.suggested_accumulate),
              report.exact ? "keeps" : "comes closest to",
              static_cast<long long>(report.intended_effective_batch),
              devices::format_bytes(report.suggested_peak_bytes).c_str());
  if (o.throughput)
    print_throughput(graph, bytes, fitting_batches(report));
  return exit_ok;
}

int ladder(const runtime::validated_graph& graph, std::int64_t bytes) {
  std::printf("the recovery ladder on a simulated card of %s: the graph's batch size, halved on each "
              "out-of-memory error, with the accumulate_steps that keeps the effective batch\n",
              devices::format_bytes(bytes).c_str());
  std::printf("%12s  %16s  %s\n", "batch_size", "accumulate_steps", "peak");
  auto r = runtime::fit_ladder(graph, bytes, [](const runtime::fit_probe& p) {
    std::printf("%12lld  %16lld  %s\n", static_cast<long long>(p.batch_size),
                static_cast<long long>(p.accumulate_steps), peak_text(p).c_str());
    std::fflush(stdout);
  });
  if (!r.trained) {
    std::printf("not even batch_size 1 trains on the card: make the model smaller or give it more "
                "memory\n");
    return exit_run_failed;
  }
  const auto& last = r.rungs.back();
  auto effective = last.batch_size * last.accumulate_steps;
  std::printf("%s.batch_size %lld with %s.accumulate_steps %lld trains and %s the effective batch of "
              "%lld\n", r.loader_node.c_str(), static_cast<long long>(last.batch_size),
              r.loop_node.c_str(), static_cast<long long>(last.accumulate_steps),
              effective == r.intended_effective_batch ? "keeps" : "comes closest to",
              static_cast<long long>(r.intended_effective_batch));
  return exit_ok;
}

/// 1, 2, 4, ... up to the graph's effective batch, and that batch itself.
std::vector<std::int64_t> doubling_batches(const runtime::validated_graph& graph) {
  auto probe = runtime::fit_effective_batch(graph);
  std::vector<std::int64_t> out;
  for (std::int64_t b = 1; b < probe; b *= 2)
    out.push_back(b);
  out.push_back(probe);
  return out;
}

} // namespace

int fit_command(const fit_options& o) {
  if (o.ladder && o.throughput) {
    std::fprintf(stderr, "cdui fit: --ladder and --throughput are two different fits; give one\n");
    return exit_usage;
  }
  if (o.memory.empty() && !o.throughput) {
    std::fprintf(stderr, "cdui fit: --memory is required%s; see cdui fit --help\n",
                 o.ladder ? " with --ladder" : "");
    return exit_usage;
  }
  std::int64_t bytes = unlimited_card_bytes;
  if (!o.memory.empty()) {
    auto parsed = memory_option(o.memory);
    if (!parsed)
      return exit_usage;
    bytes = *parsed;
  }
  auto loaded = load_graph(o.graph_file);
  if (!loaded)
    return exit_usage;
  try {
    if (o.ladder)
      return ladder(loaded->graph, bytes);
    if (o.memory.empty()) {
      std::printf("no --memory: the probes run on a simulated card with no practical limit\n");
      print_throughput(loaded->graph, bytes, doubling_batches(loaded->graph));
      return exit_ok;
    }
    return search(loaded->graph, bytes, o);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "cdui: %s\n", e.what());
    return exit_usage;
  }
}

} // namespace cdui::apps
