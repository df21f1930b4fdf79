#include "apps/run_json.hpp"

#include "devices/device.hpp"
#include "messages/json_text.hpp"
#include "messages/slot_key.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;

json parse_or_null(const std::string& text) {
  return json::parse(text, nullptr, false);
}

std::string string_at(const json& j, const char* key) {
  auto i = j.find(key);
  return i != j.end() && i->is_string() ? i->get<std::string>() : std::string{};
}

std::int64_t ms_at(const json& j, const char* key) {
  auto i = j.find(key);
  return i != j.end() && i->is_number_integer() ? i->get<std::int64_t>() : 0;
}

} // namespace

json device_requested(const json& options) {
  return options.is_object() && options.contains("device") ? options["device"] : json(nullptr);
}

std::string device_text(const run_info& r) {
  auto options = json::parse(r.options, nullptr, false);
  auto asked = options.is_object() && options["device"].is_string() ? options["device"].get<std::string>()
                                                                    : std::string{};
  if (asked.empty() || asked == "auto"
      || devices::kind_of(asked) == devices::kind_of(slot_key::parse(r.queue_key).device))
    return r.queue_key;
  return r.queue_key + " (asked " + asked + ")";
}

json run_json(const run_info& r) {
  json j{{"run_id", r.id},
          {"name", r.name},
          {"status", to_string(r.status)},
          {"active", !is_final(r.status)},
          {"queue_key", r.queue_key},
          {"queue_position", r.queue_position},
          {"waiting_reason", r.waiting_reason.empty() ? json(nullptr) : json(r.waiting_reason)},
          {"error", r.error.empty() ? json(nullptr) : json(r.error)},
          {"created_ms", r.created_ms},
          {"started_ms", r.started_ms ? json(r.started_ms) : json(nullptr)},
          {"finished_ms", r.finished_ms ? json(r.finished_ms) : json(nullptr)},
          {"final_metrics", parse_or_null(r.final_metrics)},
          {"options", parse_or_null(r.options)}};
  j["device_requested"] = device_requested(j["options"]);
  return j;
}

run_info run_from_json(const json& j) {
  run_info r;
  if (!j.is_object())
    return r;
  r.id = string_at(j, "run_id");
  r.name = string_at(j, "name");
  r.status = parse_run_status(string_at(j, "status")).value_or(run_status::failed);
  r.queue_key = string_at(j, "queue_key");
  if (auto p = j.find("queue_position"); p != j.end() && p->is_number_unsigned())
    r.queue_position = static_cast<std::uint32_t>(p->get<std::uint64_t>());
  r.waiting_reason = string_at(j, "waiting_reason");
  r.error = string_at(j, "error");
  if (auto o = j.find("options"); o != j.end() && o->is_object())
    r.options = json_text(*o);
  r.created_ms = ms_at(j, "created_ms");
  r.started_ms = ms_at(j, "started_ms");
  r.finished_ms = ms_at(j, "finished_ms");
  if (auto m = j.find("final_metrics"); m != j.end() && m->is_object())
    r.final_metrics = json_text(*m);
  return r;
}

} // namespace cdui::apps
