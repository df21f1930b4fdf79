#include "apps/agent_command.hpp"
#include "apps/agent_files.hpp"

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
    cdui::agent::config cfg{home, options.name, options.devices, "", options.one_shot, options.server,
                            options.credential_file, options.server_key, mark_joined};
    cfg.ephemeral = options.ephemeral;
    cfg.rendezvous_host = options.rendezvous_host;
    a = std::make_unique<cdui::agent>(std::move(cfg));
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
  if (options.ephemeral)
    args.push_back("--ephemeral");
  for (const auto& [flag, value] : {std::pair{"--server", options.server},
                                    std::pair{"--credential", options.credential_file.empty()
                                                                ? std::string{}
                                                                : std::filesystem::absolute(options.credential_file).string()},
                                    std::pair{"--server-key", options.server_key},
                                    std::pair{"--rendezvous-host", options.rendezvous_host}})
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

} // namespace cdui::apps
