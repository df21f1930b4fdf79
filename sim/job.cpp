#include "sim/job.hpp"

#include <cstdio>

namespace cdui::sim {

std::string run_name(std::size_t index) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "j%08zu", index);
  return buf;
}

std::size_t run_index(const std::string& run_id) {
  return static_cast<std::size_t>(std::stoull(run_id.substr(1)));
}

} // namespace cdui::sim
