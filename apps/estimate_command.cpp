#include "apps/estimate_command.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "apps/run_command.hpp"
#include "devices/device.hpp"
#include "devices/memory.hpp"
#include "runtime/estimate.hpp"
#include "runtime/parameter_estimate.hpp"
#include "runtime/validate.hpp"

namespace cdui::apps {

namespace {

void print_term(const std::string& name, std::int64_t bytes, const std::string& human,
                const std::string& detail) {
  std::printf("  %-18s %14lld B  %10s  %s\n", name.c_str(), static_cast<long long>(bytes),
              human.c_str(), detail.c_str());
}

void print_table(const runtime::memory_estimate& e) {
  std::printf("estimate for TrainingLoop %s on %s (%s), batch %lld", e.loop_node.c_str(),
              e.device.c_str(), e.precision.c_str(), static_cast<long long>(e.batch_size));
  if (e.eval_batch_size > 0)
    std::printf(", validation batch %lld", static_cast<long long>(e.eval_batch_size));
  std::printf("; activations from the %s\n", e.activations_from.c_str());
  for (const auto& t : e.terms)
    print_term(t.name, t.bytes, devices::format_bytes(t.bytes), t.detail);
  print_term("total", e.total(), devices::format_bytes(e.total()), "the sum of the terms");
  if (e.cards > 1)
    std::printf("per card: %s on each of the %lld cards (the same on each: without DDP, each card of "
                "a device set holds a whole run)\n", devices::format_bytes(e.total()).c_str(),
                static_cast<long long>(e.cards));
}

/// GiB with two decimals: the seeds' "GB" (1024^3 bytes; docs/training-memory.md, "From a parameter count").
std::string gib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1LL << 30));
  return buf;
}

void print_table(const runtime::parameter_estimate& e) {
  const auto& r = e.request;
  std::printf("estimate for %s parameters in %s with %s", runtime::thousands(r.parameters).c_str(),
              runtime::to_string(r.weights), runtime::state_of(r.optimizer).name.c_str());
  if (r.trainable < 1)
    std::printf(", %s of them trained", runtime::thousands(e.trainable_parameters).c_str());
  std::printf("; activations not counted\n");
  for (const auto& t : e.terms)
    print_term(t.name, t.bytes, gib(t.bytes), t.detail);
  print_term("total", e.total(), gib(e.total()), "the sum of the terms");
}

/// The estimate from a parameter count: exit 0 with the figure, 2 for a flag it cannot take.
int parameter_estimate_command(const estimate_command_options& options) {
  if (!options.device.empty() || options.cards != 1) {
    std::fprintf(stderr, "cdui estimate: --%s applies to a graph's estimate, not to one from "
                 "--parameters\n", options.device.empty() ? "cards" : "device");
    return exit_usage;
  }
  nlohmann::json fields = nlohmann::json::object();
  for (const auto& [field, value] : options.parameter_flags)
    fields[field] = value;
  auto read = runtime::read_parameter_request(fields);
  if (auto* bad = std::get_if<runtime::request_error>(&read)) {
    auto flag = bad->field;
    std::replace(flag.begin(), flag.end(), '_', '-');
    std::fprintf(stderr, "cdui estimate: --%s %s\n", flag.c_str(), bad->message.c_str());
    return exit_usage;
  }
  auto e = runtime::estimate_from_parameters(std::get<runtime::parameter_request>(read));
  if (options.json)
    std::printf("%s\n", runtime::to_json(e).dump(2).c_str());
  else
    print_table(e);
  return exit_ok;
}

} // namespace

int estimate_command(const estimate_command_options& options) {
  if (options.graph_file.empty() == options.parameter_flags.empty()) {
    std::fprintf(stderr, "cdui estimate: %s; see cdui estimate --help\n",
                 options.graph_file.empty()
                   ? "give a graph file, or --parameters N for an estimate from a parameter count"
                   : "give a graph file or --parameters N, not both (--precision, --optimizer, "
                     "--trainable and --state-precision go with --parameters)");
    return exit_usage;
  }
  if (!options.parameter_flags.empty())
    return parameter_estimate_command(options);
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
