#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/server/server.hpp"
#include "testkit/wait.hpp"

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

/// A run request for the graph, seed 7.
inline cdui::run_request request(std::string graph, std::string name = "") {
  cdui::run_request r;
  r.graph_json = std::move(graph);
  r.name = std::move(name);
  r.has_seed = true;
  r.seed = 7;
  return r;
}

inline cdui::run_request request(const nlohmann::json& graph, std::string name = "") {
  return request(graph.dump(), std::move(name));
}

/// Whether the run reaches the status within 30 s.
inline bool reaches(cdui::server& srv, const std::string& id, cdui::run_status want) {
  return eventually([&] {
    auto info = srv.info(id);
    return info && info->status == want;
  }, std::chrono::seconds(30));
}

} // namespace cdui::test
