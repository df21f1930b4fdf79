#pragma once
// What the HTTP API's routes share beyond http_edge.hpp: reading query parameters and answering
// lists a page at a time, and the routes of each resource (http_*_routes.cpp), which
// mount_http_api adds to one route table.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/http_edge.hpp"
#include "apps/http_routes.hpp"
#include "apps/list_page.hpp"

namespace cdui {
class server;
}

namespace cdui::apps {

/// The page size of GET /api/runs when `limit` is not given, and the largest page of any list.
inline constexpr std::size_t default_page = 50;
inline constexpr std::size_t max_page = 1000;

/// `text` as JSON; null when it is not JSON (what the store holds was written by the server).
inline nlohmann::json parse_or_null(const std::string& text) {
  return nlohmann::json::parse(text, nullptr, false);
}

/// Reads an integer query parameter of at least `min`; false (with a 400 sent) when it is not one.
bool query_number(const httplib::Request& req, httplib::Response& res, const char* name,
                  std::uint64_t& out, std::uint64_t min = 0);

/// The page `req` asks of a list with `<prefix>limit` (at most max_page) and `<prefix>offset`;
/// `page` is empty when it names neither and there is no `default_limit` (the lists that answered
/// whole before they were paged still do), `refused` true with the 400 sent for a bad value.
struct page_request {
  bool refused = false;
  std::optional<list_page> page;
};

page_request page_asked(const httplib::Request& req, httplib::Response& res, const std::string& prefix = "",
                        std::uint64_t default_limit = 0);

/// GET of a list that answers whole unless the request names `limit` or `offset`: `key` holds
/// `to_json` of each item of the page, and a page's answer says its total, limit and offset.
template <class T, class ToJson>
void reply_list(const httplib::Request& req, httplib::Response& res, const char* key, const std::vector<T>& all,
                ToJson to_json) {
  auto asked = page_asked(req, res);
  if (asked.refused)
    return;
  auto items = nlohmann::json::array();
  for (const auto& item : asked.page ? asked.page->of(all) : all)
    items.push_back(to_json(item));
  nlohmann::json answer{{key, items}};
  if (asked.page)
    answer.update(page_fields(*asked.page, all.size()));
  reply(res, 200, answer);
}

/// The routes of each resource, added to `routes` by mount_http_api.
/// Runs: submit, list, read, cancel, delete, events, metrics, outputs; and closing a session.
void add_run_routes(route_table& routes, cdui::server& runtime, std::size_t max_waiting_polls);
/// Sweeps and studies: submit, list, read, cancel, a sweep's results.csv.
void add_search_routes(route_table& routes, cdui::server& runtime);
/// Workers, their enrollments and draining; devices and how their cards are shared.
void add_worker_routes(route_table& routes, cdui::server& runtime);
/// The static memory estimate.
void add_estimate_routes(route_table& routes);
/// The server itself: health, status, version, queues, and /metrics for Prometheus.
void add_server_routes(route_table& routes, cdui::server& runtime);

} // namespace cdui::apps
