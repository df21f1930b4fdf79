#include "apps/agent_files.hpp"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "messages/json_text.hpp"
#include "storage/home.hpp"
#include "storage/server_files.hpp"

namespace cdui::apps {

std::filesystem::path agent_dir(const std::filesystem::path& home, const std::string& name) {
  return home / "agents" / name;
}

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

} // namespace cdui::apps
