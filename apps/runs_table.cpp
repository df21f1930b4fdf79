#include "apps/runs_table.hpp"

#include <algorithm>
#include <ctime>

#include <nlohmann/json.hpp>

#include "actors/policy/run_options.hpp"
#include "apps/run_json.hpp"
#include "apps/run_report.hpp"
#include "apps/text_table.hpp"
#include "devices/memory.hpp"
#include "messages/slot_key.hpp"
#include "messages/text.hpp"

namespace cdui::apps {

namespace {

/// How much of a name and a reason `cdui runs` shows without --wide.
constexpr std::size_t name_shown = 20;
constexpr std::size_t reason_shown = 100;

/// The first `n` characters of printable `s`, "~" marking a cut.
std::string cut(const std::string& s, std::size_t n) {
  if (text::characters(s) <= n)
    return s;
  std::string out;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < s.size() && kept < n - 1; ++kept) {
    auto len = std::size_t{1};
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0xf0) len = 4; else if (c >= 0xe0) len = 3; else if (c >= 0xc0) len = 2;
    out += s.substr(i, len);
    i += len;
  }
  return out + "~";
}

std::string local_time(std::int64_t ms) {
  if (ms == 0)
    return "-";
  auto t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string seconds_text(const run_info& r, std::int64_t now_ms) {
  if (r.started_ms <= 0)
    return "-";
  auto end = r.finished_ms > 0 ? r.finished_ms : now_ms;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(end - r.started_ms) / 1000.0);
  return buf;
}

run_request options_of(const run_info& r) {
  run_request options;
  if (!policy::apply_options(nlohmann::json::parse(r.options, nullptr, false), options).empty())
    return {};
  return options;
}

/// What the run asked for where it differs from the defaults: "device cuda, devices sim:0,sim:1,
/// target gpu-box"; "" when it asked for nothing.
std::string asked_text(const run_request& o) {
  std::string text;
  auto add = [&](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  if (!o.device.empty())
    add("device " + o.device);
  if (!o.devices.empty()) {
    std::string list;
    for (const auto& d : o.devices)
      list += (list.empty() ? "" : ",") + d;
    add("devices " + list);
  }
  if (!o.worker.empty())
    add("target " + o.worker);
  return printable(text);
}

} // namespace

std::string reason_text(const run_info& r) {
  auto text = r.status == run_status::queued ? r.waiting_reason : r.error;
  return printable(text.substr(0, text.find('\n')));
}

std::string budget_text(const run_info& r) {
  auto options = options_of(r);
  if (options.memory_bytes <= 0)
    return "-";
  const auto& source = options.memory_source;
  return devices::format_bytes(options.memory_bytes)
         + (source == "measured" ? " meas." : source == "estimate" ? " est." : "");
}

std::string runs_table(const std::vector<run_info>& runs, std::uint64_t total, bool wide,
                       std::int64_t now_ms) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"ID", "NAME", "STATUS", "DEVICE", "QUEUE", "BUDGET", "CREATED", "SECONDS"});
  if (wide)
    rows.back().insert(rows.back().end(), {"STARTED", "ENDED"});
  rows.back().push_back("REASON");
  for (const auto& r : runs) {
    auto name = printable(r.name);
    auto reason = reason_text(r);
    std::vector<std::string> row{
      printable(r.id),
      wide ? name : cut(name, name_shown),
      std::string{to_string(r.status)},
      r.queue_key.empty() ? "-" : printable(device_text(r)),
      r.queue_position > 0 ? std::to_string(r.queue_position) : "-",
      budget_text(r),
      local_time(r.created_ms),
      seconds_text(r, now_ms)};
    if (wide)
      row.insert(row.end(), {local_time(r.started_ms), local_time(r.finished_ms)});
    row.push_back(wide ? reason : cut(reason, reason_shown));
    rows.push_back(std::move(row));
  }
  auto out = format_table(rows);
  if (total > runs.size())
    out += "(" + std::to_string(runs.size()) + " of " + std::to_string(total)
           + " runs; --limit shows more)\n";
  return out;
}

std::string run_details(const run_info& r, const std::string& folder, std::int64_t now_ms) {
  auto options = options_of(r);
  auto key = slot_key::parse(r.queue_key);
  std::vector<std::vector<std::string>> rows;
  auto field = [&](const char* name, std::string value) {
    rows.push_back({*name ? std::string{name} + ":" : std::string{}, std::move(value)});
  };
  field("run", printable(r.id));
  field("name", r.name.empty() ? "-" : printable(r.name));
  field("status", std::string{to_string(r.status)});
  if (r.status == run_status::queued) {
    field("queue", r.queue_position > 0 ? "position " + std::to_string(r.queue_position)
                                            + " in the queue of " + printable(r.queue_key)
                                        : "leaving the queue of " + printable(r.queue_key));
    if (!r.waiting_reason.empty())
      field("waits", reason_text(r));
  }
  // A run for any worker or the one-shot pool has no place until it takes a slot.
  bool placed = r.queue_key != "any" && r.queue_key != "one-shot";
  field("device", !placed || key.device.empty() ? "-" : printable(key.device));
  field("worker", !placed ? std::string{"- (not placed yet: waits in " + r.queue_key + ")"}
                  : key.local() ? std::string{"- (this server)"} : printable(key.offerer));
  if (auto asked = asked_text(options); !asked.empty())
    field("asked", asked);
  field("budget", budget_text(r));
  field("created", local_time(r.created_ms));
  field("started", local_time(r.started_ms));
  field("ended", local_time(r.finished_ms));
  if (r.started_ms > 0)
    field("seconds", seconds_text(r, now_ms) + (r.finished_ms > 0 ? "" : " (so far)"));
  // A queued run's folder is made when it starts; until then its graph and events are in cdui.db.
  field("folder", printable(folder) + (r.status == run_status::queued ? " (made when the run starts)" : ""));
  if (!key.local())
    field("", "and agents/" + printable(key.offerer) + "/runs/" + printable(r.id)
                 + " in the home of worker '" + printable(key.offerer) + "'");
  auto out = format_table(rows);
  if (!r.error.empty()) {
    out += "error:\n";
    auto error = r.error;
    for (std::size_t start = 0; start <= error.size();) {
      auto end = std::min(error.find('\n', start), error.size());
      out += "  " + printable(error.substr(start, end - start)) + "\n";
      start = end + 1;
    }
  }
  out += final_metrics_text(r.final_metrics);
  return out;
}

} // namespace cdui::apps
