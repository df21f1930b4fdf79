#include "apps/run_report.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace cdui::apps {

namespace {

void print_final_metrics(const std::string& metrics_json) {
  auto metrics = nlohmann::json::parse(metrics_json, nullptr, false);
  if (!metrics.is_object() || metrics.empty())
    return;
  std::printf("final metrics:\n");
  for (const auto& [node, values] : metrics.items()) {
    for (const auto& [name, v] : values.items()) {
      if (v.is_number_float())
        std::printf("  %s.%s = %.4f\n", node.c_str(), name.c_str(), v.get<double>());
      else
        std::printf("  %s.%s = %s\n", node.c_str(), name.c_str(), v.dump().c_str());
    }
  }
}

} // namespace

void print_run_end(const run_info& run) {
  auto seconds = static_cast<double>(run.finished_ms - run.created_ms) / 1000.0;
  std::printf("run %s %s in %.1f s\n", run.id.c_str(), std::string{to_string(run.status)}.c_str(),
              seconds);
  print_final_metrics(run.final_metrics);
  std::fflush(stdout);
  if (run.status == run_status::failed)
    std::fprintf(stderr, "cdui: run %s failed: %s\n", run.id.c_str(), run.error.c_str());
}

} // namespace cdui::apps
