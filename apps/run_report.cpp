#include "apps/run_report.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "messages/json_text.hpp"

namespace cdui::apps {

std::string final_metrics_text(const std::string& metrics_json) {
  auto metrics = nlohmann::json::parse(metrics_json, nullptr, false);
  if (!metrics.is_object() || metrics.empty())
    return "";
  std::string out = "final metrics:\n";
  for (const auto& [node, values] : metrics.items()) {
    if (!values.is_object())
      continue;
    for (const auto& [name, v] : values.items()) {
      std::string value;
      if (v.is_number_float()) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.4f", v.get<double>());
        value = buf;
      } else {
        value = json_text(v);
      }
      out += "  " + node + "." + name + " = " + value + "\n";
    }
  }
  return out;
}

void print_run_end(const run_info& run) {
  auto seconds = static_cast<double>(run.finished_ms - run.created_ms) / 1000.0;
  std::printf("run %s %s in %.1f s\n", run.id.c_str(), std::string{to_string(run.status)}.c_str(),
              seconds);
  std::fputs(final_metrics_text(run.final_metrics).c_str(), stdout);
  std::fflush(stdout);
  if (run.status == run_status::failed)
    std::fprintf(stderr, "cdui: run %s failed: %s\n", run.id.c_str(), run.error.c_str());
  if (run.status == run_status::pruned)
    std::fprintf(stderr, "cdui: run %s was %s\n", run.id.c_str(), run.error.c_str());
}

} // namespace cdui::apps
