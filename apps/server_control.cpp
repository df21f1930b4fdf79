// `cdui stop` and `cdui status`: they talk to the server of this home, and need no libtorch.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/http_api.hpp"
#include "apps/run_command.hpp"
#include "apps/server_command.hpp"
#include "apps/text_table.hpp"
#include "storage/home.hpp"
#include "storage/server_files.hpp"

namespace cdui::apps {

int stop_command(int timeout_seconds) {
  auto home = storage::default_home();
  auto address = storage::read_server_json(home);
  if (!storage::home_lock::server_running(home) || !address) {
    std::printf("no cdui server is running on %s\n", home.c_str());
    return exit_ok;
  }
  if (::kill(address->pid, SIGTERM) != 0) {
    std::perror("cdui: kill");
    return exit_run_failed;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  while (storage::home_lock::server_running(home)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::fprintf(stderr, "cdui: the server (pid %d) did not stop within %d s\n", address->pid,
                   timeout_seconds);
      return exit_run_failed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::printf("cdui server stopped (pid %d)\n", address->pid);
  return exit_ok;
}

int status_command() {
  auto home = storage::default_home();
  auto address = storage::read_server_json(home);
  if (!storage::home_lock::server_running(home) || !address) {
    std::printf("no cdui server is running on %s\n", home.c_str());
    return exit_run_failed;
  }
  httplib::Client client{address->host, address->port};
  auto token = storage::read_token(home);
  auto res = client.Get("/api/status", {{token_header, token.value_or("")}});
  if (!res || res->status != 200) {
    std::printf("cdui server pid %d holds %s but does not answer on %s\n", address->pid,
                home.c_str(), address->http_url().c_str());
    return exit_run_failed;
  }
  std::printf("cdui server running: %s (pid %d, home %s)\n", address->http_url().c_str(),
              address->pid, home.c_str());
  auto status = nlohmann::json::parse(res->body, nullptr, false);
  if (!status.is_object())
    return exit_ok;
  const auto& queue = status["children"][0]["state"];
  std::vector<std::vector<std::string>> rows{{"DEVICE", "RUNNING", "LIMIT", "WAITING"}};
  for (const auto& q : queue["queues"])
    rows.push_back({q["device"].get<std::string>(), std::to_string(q["running"].size()),
                    std::to_string(q["limit"].get<int>()), std::to_string(q["waiting"].size())});
  std::fputs(format_table(rows).c_str(), stdout);
  std::printf("interactive: %zu of %d\n", queue["interactive"]["running"].size(),
              queue["interactive"]["limit"].get<int>());
  return exit_ok;
}

} // namespace cdui::apps
