#include "storage/run_directory.hpp"

#include <ctime>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "messages/json_text.hpp"
#include "storage/home.hpp"

namespace cdui::storage {

run_directory::run_directory(const std::filesystem::path& home, const std::string& run_id,
                             std::string_view graph_json)
  : run_directory(home / "runs" / run_id, graph_json) {}

run_directory::run_directory(std::filesystem::path path, std::string_view graph_json)
  : path_(std::move(path)) {
  std::filesystem::create_directories(path_ / "checkpoints");
  write_file_atomic(path_ / "graph.json", graph_json);
  events_.open(path_ / "events.jsonl", std::ios::app);
  log_.open(path_ / "output.log", std::ios::app);
  if (!events_ || !log_)
    throw std::runtime_error("cannot open the event log in " + path_.string());
}

void run_directory::append(const run_event& event) {
  nlohmann::json line{{"cursor", event.cursor},
                      {"time_ms", event.time_ms},
                      {"type", event.type},
                      {"data", nlohmann::json::parse(event.data, nullptr, false)}};
  events_ << json_text(line) << '\n';
  events_.flush();
  log_ << log_line(event) << '\n';
  log_.flush();
}

std::unique_ptr<run_directory> existing_run_directory(const std::filesystem::path& home,
                                                      const std::string& run_id,
                                                      std::string_view graph_json) {
  std::error_code ec;
  if (!std::filesystem::is_directory(home / "runs" / run_id, ec))
    return nullptr;
  try {
    return std::make_unique<run_directory>(home, run_id, graph_json);
  } catch (const std::exception&) {
    return nullptr;
  }
}

std::string log_line(const run_event& event) {
  std::time_t seconds = event.time_ms / 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string{stamp} + " " + event.type + " " + event.data;
}

} // namespace cdui::storage
