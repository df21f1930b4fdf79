#include "apps/estimate_command.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>

#include "apps/run_command.hpp"
#include "devices/device.hpp"
#include "devices/memory.hpp"
#include "runtime/estimate.hpp"
#include "runtime/validate.hpp"

namespace cdui::apps {

namespace {

void print_table(const runtime::memory_estimate& e) {
  std::printf("estimate for TrainingLoop %s on %s (%s), batch %lld", e.loop_node.c_str(),
              e.device.c_str(), e.precision.c_str(), static_cast<long long>(e.batch_size));
  if (e.eval_batch_size > 0)
    std::printf(", validation batch %lld", static_cast<long long>(e.eval_batch_size));
  std::printf("; activations from the %s\n", e.activations_from.c_str());
  for (const auto& t : e.terms)
    std::printf("  %-18s %14lld B  %10s  %s\n", t.name.c_str(), static_cast<long long>(t.bytes),
                devices::format_bytes(t.bytes).c_str(), t.detail.c_str());
  std::printf("  %-18s %14lld B  %10s  the sum of the terms\n", "total",
              static_cast<long long>(e.total()), devices::format_bytes(e.total()).c_str());
  if (e.cards > 1)
    std::printf("per card: %s on each of the %lld cards (the same on each: without DDP, each card of "
                "a device set holds a whole run)\n", devices::format_bytes(e.total()).c_str(),
                static_cast<long long>(e.cards));
}

} // namespace

int estimate_command(const estimate_command_options& options) {
  auto device = devices::parse_device(options.device.empty() ? "cpu" : options.device);
  if (auto* bad = std::get_if<devices::device_parse_error>(&device)) {
    std::fprintf(stderr, "cdui: --device: %s\n", bad->message.c_str());
    return exit_usage;
  }
  auto text = read_graph_file(options.graph_file);
  if (!text)
    return exit_usage;
  auto checked = runtime::validate_graph(*text);
  if (const auto* errors = std::get_if<std::vector<runtime::graph_error>>(&checked)) {
    for (const auto& error : *errors)
      std::fprintf(stderr, "%s: %s\n", options.graph_file.c_str(), error.message.c_str());
    return exit_usage;
  }
  auto e = runtime::estimate_memory(std::get<runtime::validated_graph>(checked),
                                    {options.device, options.cards});
  if (options.json) {
    std::printf("%s\n", runtime::to_json(e).dump(2).c_str());
    return e.is_rough() ? exit_run_failed : exit_ok;
  }
  if (e.is_rough()) {
    std::printf("Rough estimate, no figure: %s\n", e.rough.c_str());
    return exit_run_failed;
  }
  print_table(e);
  return exit_ok;
}

} // namespace cdui::apps
