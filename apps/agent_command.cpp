#include "apps/agent_command.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "actors/agent/agent.hpp"
#include "apps/client_commands.hpp"
#include "apps/daemon.hpp"
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

/// How long `cdui agent start` waits for the agent it started to come up.
constexpr auto agent_start_timeout = std::chrono::seconds(30);

std::filesystem::path agent_dir(const std::filesystem::path& home, const std::string& name) {
  return home / "agents" / name;
}

/// What agents/<name>/agent.json says of a running agent: its pid, the server it joins (a
/// --server endpoint; empty: the server of its home) and since when it runs.
struct agent_record {
  std::string name;
  int pid = 0;
  std::string server;
  std::int64_t started_ms = 0;
  /// When a server last welcomed it; 0: not yet.
  std::int64_t joined_ms = 0;
};

void write_agent_json(const std::filesystem::path& dir, const agent_record& r) {
  storage::write_file_atomic(dir / "agent.json",
                             json_text(nlohmann::json{{"name", r.name},
                                                      {"pid", r.pid},
                                                      {"server", r.server},
                                                      {"started_ms", r.started_ms},
                                                      {"joined_ms", r.joined_ms}})
                               + "\n");
}


std::optional<agent_record> read_agent(const std::filesystem::path& dir) {
  std::ifstream in{dir / "agent.json"};
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j["pid"].is_number_integer())
    return std::nullopt;
  return agent_record{j.value("name", dir.filename().string()), j["pid"].get<int>(),
                      j.value("server", std::string{}), j.value("started_ms", std::int64_t{0}),
                      j.value("joined_ms", std::int64_t{0})};
}

std::optional<int> agent_pid(const std::filesystem::path& dir) {
  auto record = read_agent(dir);
  return record ? std::optional<int>{record->pid} : std::nullopt;
}

bool agent_running(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / "agent.lock")
         && !storage::home_lock::try_lock_file(dir / "agent.lock", storage::home_lock::mode::shared);
}

/// The agents running on `home` now (each holds its agents/<name>/agent.lock), by name.
std::vector<agent_record> running_agents(const std::filesystem::path& home) {
  std::vector<agent_record> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator{home / "agents", ec})
    if (agent_running(entry.path()))
      if (auto record = read_agent(entry.path()))
        out.push_back(*record);
  std::sort(out.begin(), out.end(),
            [](const agent_record& a, const agent_record& b) { return a.name < b.name; });
  return out;
}

cdui::agent* running_agent = nullptr;
/// This process's agent.json while its agent runs (the welcome callback rewrites it).
std::optional<std::pair<std::filesystem::path, agent_record>> own_record;

/// A server welcomed this process's agent: agent.json says since when.
void mark_joined() {
  if (!own_record)
    return;
  own_record->second.joined_ms = now_ms();
  write_agent_json(own_record->first, own_record->second);
}

extern "C" void on_stop_signal(int) {
  if (running_agent != nullptr)
    running_agent->stop();
}

void log_to(const std::filesystem::path& file) {
  std::vector<spdlog::sink_ptr> sinks{
    std::make_shared<spdlog::sinks::basic_file_sink_mt>(file.string()),
    std::make_shared<spdlog::sinks::stderr_color_sink_mt>()};
  auto logger = std::make_shared<spdlog::logger>("cdui-agent", sinks.begin(), sinks.end());
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

/// The agent itself, attached to this process.
int run_agent(cdui::agent& a, const std::filesystem::path& home) {
  auto dir = agent_dir(home, a.name());
  auto lock = storage::home_lock::try_lock_file(dir / "agent.lock",
                                                storage::home_lock::mode::exclusive);
  if (!lock) {
    std::fprintf(stderr, "cdui: an agent named '%s' is already running on %s (pid %d)\n",
                 a.name().c_str(), home.c_str(), agent_pid(dir).value_or(0));
    return exit_run_failed;
  }
  log_to(dir / "agent.log");
  own_record.emplace(dir, agent_record{a.name(), ::getpid(), a.server(), now_ms(), 0});
  write_agent_json(dir, own_record->second);
  running_agent = &a;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  spdlog::info("agent '{}' (pid {}) for the server {}", a.name(), ::getpid(),
               a.server().empty() ? "on " + home.string() : "at " + a.server());
  auto refused = a.run();
  running_agent = nullptr;
  own_record.reset();
  std::error_code ec;
  std::filesystem::remove(dir / "agent.json", ec);
  if (refused) {
    std::fprintf(stderr, "cdui: the server refused agent '%s': %s\n", a.name().c_str(),
                 refused->c_str());
    return exit_run_failed;
  }
  spdlog::info("agent '{}' stopped", a.name());
  return exit_ok;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items)
    out += (out.empty() ? "" : ",") + s;
  return out;
}

} // namespace

int agent_start_command(const agent_options& options) {
  ::umask(077);  // its log, run folders and checkpoints are this user's alone, as the server's are
  auto home = storage::default_home();
  std::unique_ptr<cdui::agent> a;
  try {
    a = std::make_unique<cdui::agent>(
      cdui::agent::config{home, options.name, options.devices, "", options.one_shot, options.server,
                          options.credential_file, options.server_key, mark_joined});
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "cdui: %s\n", e.what());
    return exit_usage;
  }
  if (options.foreground)
    return run_agent(*a, home);
  auto dir = agent_dir(home, a->name());
  if (agent_running(dir)) {
    std::fprintf(stderr, "cdui: an agent named '%s' is already running on %s (pid %d)\n",
                 a->name().c_str(), home.c_str(), agent_pid(dir).value_or(0));
    return exit_run_failed;
  }
  std::vector<std::string> args{"agent", "start", "--foreground", "--name", a->name()};
  if (!options.devices.empty()) {
    args.push_back("--devices");
    args.push_back(joined(options.devices));
  }
  if (options.one_shot)
    args.push_back("--one-shot");
  for (const auto& [flag, value] : {std::pair{"--server", options.server},
                                    std::pair{"--credential", options.credential_file.empty()
                                                                ? std::string{}
                                                                : std::filesystem::absolute(options.credential_file).string()},
                                    std::pair{"--server-key", options.server_key}})
    if (!value.empty()) {
      args.push_back(flag);
      args.push_back(value);
    }
  // With a server to join, it returns once the server has welcomed the agent, so that a
  // `cdui run --target NAME` right after finds the worker; with none yet, once the agent runs.
  bool server_known = !options.server.empty() || find_server(home).has_value();
  auto started = start_daemon(
    args,
    [&](pid_t child) {
      auto record = read_agent(dir);
      return record && record->pid == child && (!server_known || record->joined_ms > 0);
    },
    agent_start_timeout);
  auto log = (dir / "agent.log").string();
  if (started.result == daemon_start::outcome::exited) {
    // A refusal (another version, a bad credential) ends it before any welcome.
    std::fprintf(stderr, "cdui: agent '%s' %s; see %s\n", a->name().c_str(),
                 server_known ? "ended before the server welcomed it" : "did not start", log.c_str());
    return exit_run_failed;
  }
  if (started.result == daemon_start::outcome::timed_out && agent_pid(dir) != started.pid) {
    std::fprintf(stderr, "cdui: the agent did not start; see %s\n", log.c_str());
    return exit_run_failed;
  }
  auto where = options.server.empty() ? "on " + home.string() : "at " + options.server;
  if (!server_known)
    std::printf("cdui agent '%s' started (pid %d); it joins the server on %s once one runs there "
                "(cdui start)\n", a->name().c_str(), started.pid, home.c_str());
  else if (started.result == daemon_start::outcome::ready)
    std::printf("cdui agent '%s' started (pid %d) and joined the server %s\n", a->name().c_str(),
                started.pid, where.c_str());
  else
    std::printf("cdui agent '%s' started (pid %d); it has not joined the server %s yet (see %s)\n",
                a->name().c_str(), started.pid, where.c_str(), log.c_str());
  return exit_ok;
}

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
        // seed 001: "Same physical card as ...", with the runs on the card and its limit.
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
