// The HTTP API's answers about the server itself (docs/http-api.md#the-server): health, status,
// version, the queues, and /metrics in Prometheus' text format.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "actors/server/server.hpp"
#include "apps/http_resources.hpp"
#include "apps/status_json.hpp"
#include "messages/clock.hpp"
#include "messages/version.hpp"
#include "messages/wire.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;

/// Prometheus' text format: runs by status, and per device the queue length, slot use and limit.
/// Seconds as /metrics writes them: fixed, to the millisecond (ostream's default would write a
/// start time as 1.718e+09).
std::string seconds_text(double s) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

double uptime_s(const cdui::server& runtime) {
  return static_cast<double>(std::max<std::int64_t>(0, now_ms() - runtime.started_ms())) / 1000.0;
}

/// GET /api/version: what this server runs and since when.
json version_json(const cdui::server& runtime) {
  return {{"version", cdui::version()},
          {"protocol", wire::protocol_version},
          {"started_ms", runtime.started_ms()},
          {"uptime_s", uptime_s(runtime)}};
}

/// /metrics' part on how long runs waited in their queues: a Prometheus histogram.
void write_queue_waits(std::ostream& out, const queue_wait_histogram& h) {
  out << "# HELP cdui_queue_wait_seconds How long runs waited in their queue before they started, "
         "since the server started.\n# TYPE cdui_queue_wait_seconds histogram\n";
  for (std::size_t i = 0; i < h.bounds.size(); ++i)
    out << "cdui_queue_wait_seconds_bucket{le=\"" << h.bounds[i] << "\"} " << h.buckets[i] << '\n';
  out << "cdui_queue_wait_seconds_bucket{le=\"+Inf\"} " << h.count << '\n'
      << "cdui_queue_wait_seconds_sum " << seconds_text(h.sum_s) << '\n'
      << "cdui_queue_wait_seconds_count " << h.count << '\n';
}

/// /metrics' part on runs by status and reason: queued ones by why they wait, failed ones by why
/// they failed.
void write_runs_by_reason(std::ostream& out, cdui::server& runtime, const run_queue_status& queue) {
  std::map<std::string, int> waiting;
  for (const auto& w : queue.waiting_runs)
    ++waiting[w.kind];
  out << "# HELP cdui_runs_by_reason Queued runs by why they wait, failed runs by why they "
         "failed.\n# TYPE cdui_runs_by_reason gauge\n";
  for (const auto& [reason, n] : waiting)
    out << "cdui_runs_by_reason{status=\"queued\",reason=\"" << reason << "\"} " << n << '\n';
  for (const auto& [reason, n] : runtime.failed_by_reason())
    out << "cdui_runs_by_reason{status=\"failed\",reason=\"" << reason << "\"} " << n << '\n';
}

std::string prometheus_text(cdui::server& runtime) {
  std::ostringstream out;
  out << "# HELP cdui_build_info The server's cdui version and wire protocol.\n"
         "# TYPE cdui_build_info gauge\n"
      << "cdui_build_info{version=\"" << cdui::version() << "\",protocol=\""
      << wire::protocol_version << "\"} 1\n"
      << "# HELP cdui_start_time_seconds When the server started, in seconds since the epoch.\n"
         "# TYPE cdui_start_time_seconds gauge\n"
      << "cdui_start_time_seconds " << seconds_text(static_cast<double>(runtime.started_ms()) / 1000.0)
      << '\n'
      << "# HELP cdui_uptime_seconds How long the server has run.\n"
         "# TYPE cdui_uptime_seconds gauge\n"
      << "cdui_uptime_seconds " << seconds_text(uptime_s(runtime)) << '\n';
  out << "# HELP cdui_runs Runs in the store, by status.\n# TYPE cdui_runs gauge\n";
  for (auto status : all_run_statuses)
    out << "cdui_runs{status=\"" << to_string(status) << "\"} "
        << runtime.runs(std::string{to_string(status)}, 1, 0).value().total << '\n';
  auto status = runtime.status(false);
  const auto& queues = status.queue.queues;
  out << "# HELP cdui_queue_length Runs waiting in a device's queue.\n"
         "# TYPE cdui_queue_length gauge\n";
  for (const auto& q : queues)
    out << "cdui_queue_length{device=\"" << q.device << "\"} " << q.waiting.size() << '\n';
  out << "# HELP cdui_slot_running Runs holding a device's slot.\n# TYPE cdui_slot_running gauge\n";
  for (const auto& q : queues)
    out << "cdui_slot_running{device=\"" << q.device << "\"} " << q.running.size() << '\n';
  out << "# HELP cdui_slot_limit Runs a device's slot admits at once.\n# TYPE cdui_slot_limit gauge\n";
  for (const auto& q : queues)
    out << "cdui_slot_limit{device=\"" << q.device << "\"} " << q.limit << '\n';
  out << "# HELP cdui_interactive_running Interactive runs executing.\n"
         "# TYPE cdui_interactive_running gauge\n"
      << "cdui_interactive_running " << status.queue.interactive.size() << '\n';
  out << "# HELP cdui_store_bytes Bytes of tensor storage an in-memory store holds.\n"
         "# TYPE cdui_store_bytes gauge\n";
  for (const auto& store : status.stores)
    out << "cdui_store_bytes{store=\"" << store.name << "\"} " << store.bytes << '\n';
  out << "# HELP cdui_store_max_bytes A store's byte budget (0: none).\n"
         "# TYPE cdui_store_max_bytes gauge\n";
  for (const auto& store : status.stores)
    out << "cdui_store_max_bytes{store=\"" << store.name << "\"} " << store.max_bytes << '\n';
  std::map<std::string, int> by_status{{"online", 0}, {"degraded", 0}, {"draining", 0},
                                       {"disconnected", 0}};
  for (const auto& w : status.workers.value_or(workers_status{}).workers)
    ++by_status[w.status];
  out << "# HELP cdui_workers Workers the server has seen since it started, by status.\n"
         "# TYPE cdui_workers gauge\n";
  for (const auto& [s, n] : by_status)
    out << "cdui_workers{status=\"" << s << "\"} " << n << '\n';
  if (status.workers && !status.workers->workers.empty()) {
    out << "# HELP cdui_worker_heartbeat_age_seconds Since a worker's last heartbeat.\n"
           "# TYPE cdui_worker_heartbeat_age_seconds gauge\n";
    for (const auto& w : status.workers->workers)
      out << "cdui_worker_heartbeat_age_seconds{worker=\"" << w.name << "\"} "
          << seconds_text(w.heartbeat_age_s) << '\n';
  }
  write_runs_by_reason(out, runtime, status.queue);
  write_queue_waits(out, status.queue.queue_waits);
  // Each card shared by memory, as GET /api/devices shows its ledger.
  auto memory = runtime.memory();
  if (!memory.cards.empty()) {
    out << "# HELP cdui_card_memory_bytes A card shared by memory: its total, free, reserved and "
           "running bytes, and what a new budget may take.\n"
           "# TYPE cdui_card_memory_bytes gauge\n";
    for (const auto& c : memory.cards)
      for (const auto& [what, bytes] : {std::pair{"total", c.total}, std::pair{"free", c.free},
                                        std::pair{"reserved", c.reserved}, std::pair{"running", c.running},
                                        std::pair{"may_take", c.may_take}})
        out << "cdui_card_memory_bytes{device=\"" << c.key << "\",kind=\"" << what << "\"} " << bytes
            << '\n';
  }
  if (const auto& b = status.bridge) {
    out << "# HELP cdui_bridge_messages_total Messages the ZeroMQ bridge received and sent.\n"
           "# TYPE cdui_bridge_messages_total counter\n"
        << "cdui_bridge_messages_total{direction=\"in\"} " << b->frames_in << '\n'
        << "cdui_bridge_messages_total{direction=\"out\"} " << b->frames_out << '\n'
        << "# HELP cdui_bridge_refused_total Messages the bridge refused, by reason.\n"
           "# TYPE cdui_bridge_refused_total counter\n";
    for (std::size_t i = 0; i < b->refused.size(); ++i)
      out << "cdui_bridge_refused_total{reason=\"" << wire::to_string(static_cast<wire::refusal>(i))
          << "\"} " << b->refused[i] << '\n';
  }
  return out.str();
}

} // namespace

void add_server_routes(route_table& routes, cdui::server& runtime) {
  auto& rt = runtime;
  routes.get("/api/health", route_access::read, [&rt](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, health_json(rt.caches()));
  });
  routes.get("/api/queues", route_access::read, [&rt](const httplib::Request& req, httplib::Response& res) {
    std::uint64_t most = default_page;
    if (!query_number(req, res, "limit", most, 1))
      return;
    reply(res, 200, queues_json(rt.queue(false), std::min<std::uint64_t>(most, max_page)));
  });
  routes.get("/api/status", route_access::read, [&rt](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(status_body(rt.status()), "application/json");
  });
  routes.get("/api/version", route_access::read, [&rt](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, version_json(rt));
  });
  routes.get("/metrics", route_access::read, [&rt](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(prometheus_text(rt), "text/plain; version=0.0.4");
  });
}

} // namespace cdui::apps
