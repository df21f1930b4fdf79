// `cdui agent list`, `cdui agent stop` and `cdui workers`: no agent of this process, no libtorch.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/agent_command.hpp"
#include "apps/agent_files.hpp"
#include "apps/client_commands.hpp"
#include "apps/run_command.hpp"
#include "apps/text_table.hpp"
#include "messages/clock.hpp"
#include "messages/json_text.hpp"
#include "messages/slot_key.hpp"
#include "messages/text.hpp"
#include "storage/home.hpp"
#include "storage/server_files.hpp"

namespace cdui::apps {

namespace {

/// How long ago an agent started: "45s ago", "12m 03s ago", "3h 05m ago", "2d 04h ago".
std::string running_for(std::int64_t started_ms) {
  if (started_ms == 0)
    return "-";
  auto s = std::max<std::int64_t>(0, (now_ms() - started_ms) / 1000);
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm %02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  else if (s < 86400)
    std::snprintf(buf, sizeof buf, "%lldh %02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  else
    std::snprintf(buf, sizeof buf, "%lldd %02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>(s / 3600 % 24));
  return std::string{buf} + " ago";
}

void print_agents(const std::vector<agent_record>& agents, const std::filesystem::path& home) {
  auto local = find_server(home);
  auto local_server = local ? local->address.zmq + " (this home's server)"
                            : std::string{"this home's server (none runs now)"};
  std::vector<std::vector<std::string>> rows{{"NAME", "PID", "SINCE", "SERVER"}};
  for (const auto& a : agents)
    rows.push_back({a.name, std::to_string(a.pid), running_for(a.started_ms),
                    a.server.empty() ? local_server : a.server});
  std::fputs(format_table(rows).c_str(), stdout);
}

} // namespace

int agent_list_command() {
  auto home = storage::default_home();
  auto agents = running_agents(home);
  if (agents.empty()) {
    std::printf("no agent is running on %s (start one with `cdui agent start`)\n", home.c_str());
    return exit_ok;
  }
  print_agents(agents, home);
  return exit_ok;
}

int agent_stop_command(const std::string& name, int timeout_seconds) {
  auto home = storage::default_home();
  auto agent_name = name;
  if (agent_name.empty()) {
    auto agents = running_agents(home);
    if (agents.empty()) {
      std::printf("no agent is running on %s\n", home.c_str());
      return exit_ok;
    }
    if (agents.size() > 1) {
      std::fprintf(stderr, "cdui: %zu agents run on %s; name the one to stop (cdui agent stop "
                           "NAME):\n", agents.size(), home.c_str());
      print_agents(agents, home);
      return exit_usage;
    }
    agent_name = agents.front().name;
  }
  auto dir = agent_dir(home, agent_name);
  auto pid = agent_pid(dir);
  if (!agent_running(dir) || !pid) {
    std::printf("no agent named '%s' is running on %s\n", agent_name.c_str(), home.c_str());
    return exit_ok;
  }
  ::kill(*pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  while (agent_running(dir)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::fprintf(stderr, "cdui: the agent (pid %d) did not stop within %d s\n", *pid,
                   timeout_seconds);
      return exit_run_failed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::printf("cdui agent '%s' stopped (pid %d)\n", agent_name.c_str(), *pid);
  return exit_ok;
}

int workers_command() {
  auto home = storage::default_home();
  auto server = find_server(home);
  if (!server) {
    std::fprintf(stderr, "cdui: no cdui server is running on %s\n", home.c_str());
    return exit_run_failed;
  }
  auto client = http_client(*server);
  auto res = client.Get("/api/workers");
  if (!res || res->status != 200) {
    std::fprintf(stderr, "cdui: the server at %s did not answer with its workers\n",
                 server->address.http_url().c_str());
    return exit_run_failed;
  }
  auto j = nlohmann::json::parse(res->body);
  if (j["workers"].empty())
    std::printf("no workers have joined the server on %s (start one with `cdui agent start`)\n",
                home.c_str());
  std::vector<std::vector<std::string>> rows{{"NAME", "STATUS", "VERSION", "HEARTBEAT", "DEVICES"}};
  std::vector<std::string> reasons;
  for (const auto& w : j["workers"]) {
    std::string devices;
    for (const auto& d : w["devices"]) {
      devices += (devices.empty() ? "" : ", ") + d["name"].get<std::string>();
      if (d["slots"].is_object()) {  // runs holding its slot / its limit
        devices += " " + std::to_string(d["slots"]["taken"].get<int>()) + "/"
                   + std::to_string(d["slots"]["limit"].get<int>());
        // "(same card as ...)": the card's other offerers, the runs on the card and its limit.
        for (const auto& g : d["slots"].value("shared", nlohmann::json::array()))
          if (g["group"].get<std::string>().rfind("card:", 0) == 0) {
            std::string with;
            for (const auto& k : g["with"])
              with += (with.empty() ? "" : ", ")
                      + (slot_key::parse(k.get<std::string>()).local()
                           ? k.get<std::string>() + " of this server"
                           : k.get<std::string>());
            devices += " (same card as " + with + ": " + std::to_string(g["running"].get<int>())
                       + "/" + std::to_string(g["limit"].get<int>()) + ")";
          }
      }
    }
    char age[32];
    std::snprintf(age, sizeof age, "%.1f s", w["heartbeat_age_s"].get<double>());
    rows.push_back({w["name"].get<std::string>(), w["status"].get<std::string>(),
                    w["version"].get<std::string>(), age, devices});
    reasons.push_back(w["reason"].is_string() ? printable(w["reason"].get<std::string>()) : "");
  }
  // Each worker's reason on a line of its own under it, from the STATUS column on.
  std::size_t name_width = 0;
  for (const auto& row : rows)
    name_width = std::max(name_width, text::characters(row[0]));
  std::istringstream table{rows.size() > 1 ? format_table(rows) : ""};
  std::string line;
  for (std::size_t i = 0; std::getline(table, line); ++i) {
    std::printf("%s\n", line.c_str());
    if (i > 0 && !reasons[i - 1].empty())
      std::printf("%s%s\n", std::string(name_width + 2, ' ').c_str(), reasons[i - 1].c_str());
  }
  std::string away;
  for (const auto& e : j.value("enrolled", nlohmann::json::array()))
    if (e["connected"] != true)
      away += (away.empty() ? "" : ", ") + e["name"].get<std::string>();
  if (!away.empty())
    std::printf("enrolled, not connected: %s\n", away.c_str());
  if (!j["refused_connections"].empty()) {
    std::printf("refused connections:\n");
    for (const auto& r : j["refused_connections"])
      std::printf("  %s (cdui %s): %s\n", r["name"].get<std::string>().c_str(),
                  r["version"].get<std::string>().c_str(), r["reason"].get<std::string>().c_str());
  }
  return exit_ok;
}

} // namespace cdui::apps
