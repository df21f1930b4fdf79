#include "actors/common/env_settings.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "actors/common/deadlines.hpp"

namespace cdui::actors {

double number_setting(const char* var, double fallback, double min, double max, const char* unit,
                      bool whole) {
  const char* text = std::getenv(var);
  if (text == nullptr || *text == '\0')
    return fallback;
  try {
    std::size_t used = 0;
    double x = std::stod(text, &used);
    if (used == std::string{text}.size() && x >= min && x <= max && (!whole || x == std::floor(x)))
      return x;
  } catch (const std::exception&) {
  }
  spdlog::warn("{}: '{}' is not a number of {} from {} to {}; using {}", var, text, unit, min, max,
               fallback);
  return fallback;
}

std::int64_t seconds_setting(const char* var, double default_seconds, double min, double max) {
  return static_cast<std::int64_t>(number_setting(var, default_seconds, min, max, "seconds") * 1000);
}

std::int64_t stop_deadline_setting() {
  return seconds_setting("CODEFYUI_STOP_DEADLINE_S", default_stop_deadline_ms / 1000.0, 0.05, 3600);
}

std::string seconds_text(std::int64_t ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(ms) / 1000.0);
  return text;
}

} // namespace cdui::actors
