#include "messages/stop_reason.hpp"

namespace cdui {

const char* to_string(stop_reason r) {
  switch (r) {
    case stop_reason::cancelled: return "cancelled";
    case stop_reason::interrupted: return "interrupted";
    case stop_reason::timeout: return "timeout";
    case stop_reason::given_up: return "given_up";
    case stop_reason::not_placed: return "not_placed";
    case stop_reason::pruned: return "pruned";
    case stop_reason::worker_left: return "worker_left";
  }
  return "cancelled";
}

std::optional<stop_reason> parse_stop_reason(std::string_view word) {
  for (auto r : {stop_reason::cancelled, stop_reason::interrupted, stop_reason::timeout,
                 stop_reason::given_up, stop_reason::not_placed, stop_reason::pruned,
                 stop_reason::worker_left})
    if (word == to_string(r))
      return r;
  return std::nullopt;
}

stop_reason stop_reason_of(run_status status) {
  if (status == run_status::pruned)
    return stop_reason::pruned;
  return status == run_status::cancelled ? stop_reason::cancelled : stop_reason::interrupted;
}

nlohmann::json stopped_data(stop_reason r, const std::string& message) {
  return {{"reason", to_string(r)}, {"message", message}};
}

std::optional<stop_reason> stopped_reason(const nlohmann::json& data) {
  if (!data.is_object())
    return std::nullopt;
  auto i = data.find("reason");
  return i != data.end() && i->is_string() ? parse_stop_reason(i->get<std::string>()) : std::nullopt;
}

std::string stopped_message(const nlohmann::json& data) {
  if (!data.is_object())
    return "";
  for (const char* field : {"message", "reason"})
    if (auto i = data.find(field); i != data.end() && i->is_string())
      return i->get<std::string>();
  return "";
}

} // namespace cdui
