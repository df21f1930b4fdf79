#pragma once

#include <filesystem>
#include <string>

#include "actors/server/server.hpp"

namespace cdui::test {

/// An embedded server's config on `home` with two scheduler threads, and sim cards and resume as
/// given (the fields set by name: the rest keep their defaults).
inline cdui::server::config server_config(const std::filesystem::path& home,
                                          std::string sim_devices = "", bool resume = false) {
  cdui::server::config c;
  c.home = home;
  c.scheduler_threads = 2;
  c.sim_devices = std::move(sim_devices);
  c.resume = resume;
  return c;
}

} // namespace cdui::test
