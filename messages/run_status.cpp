#include "messages/run_status.hpp"

#include <array>
#include <utility>

namespace cdui {

namespace {

constexpr std::array<std::pair<run_status, std::string_view>, 7> names{{
  {run_status::queued, "queued"},
  {run_status::running, "running"},
  {run_status::succeeded, "succeeded"},
  {run_status::failed, "failed"},
  {run_status::cancelled, "cancelled"},
  {run_status::interrupted, "interrupted"},
  {run_status::pruned, "pruned"},
}};

} // namespace

std::string_view to_string(run_status x) {
  for (const auto& [status, name] : names)
    if (status == x)
      return name;
  return "unknown";
}

std::optional<run_status> parse_run_status(std::string_view text) {
  for (const auto& [status, name] : names)
    if (name == text)
      return status;
  return std::nullopt;
}

std::string_view failure_kind(std::string_view error) {
  if (error.find("out of memory") != std::string_view::npos)
    return "out_of_memory";
  if (error.find("worker '") != std::string_view::npos)
    return "worker";
  if (error.rfind("Node ", 0) == 0)
    return "node";
  return "other";
}

} // namespace cdui
