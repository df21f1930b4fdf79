// The HTTP API's static memory estimate (docs/http-api.md#the-memory-estimate): of a graph's
// training run, or of a model known by its parameter count.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "apps/http_resources.hpp"
#include "devices/device.hpp"
#include "runtime/estimate.hpp"
#include "runtime/parameter_estimate.hpp"
#include "runtime/validate.hpp"

namespace cdui::apps {

namespace {

using nlohmann::json;

/// POST /api/estimate {"parameters": N, ...}: the weights, gradients and optimizer state of a model
/// known by its parameter count (docs/training-memory.md, "From a parameter count").
void post_parameter_estimate(const json& body, httplib::Response& res) {
  for (const auto& [field, unused] : body.items())
    if (field != "parameters" && field != "precision" && field != "optimizer" && field != "trainable"
        && field != "state_precision") {
      refuse(res, 400, "field '" + field + "' is not known with parameters (known: parameters, "
                       "precision, optimizer, trainable, state_precision)");
      return;
    }
  auto read = runtime::read_parameter_request(body);
  if (auto* bad = std::get_if<runtime::request_error>(&read)) {
    refuse(res, 400, "field '" + bad->field + "' " + bad->message);
    return;
  }
  reply(res, 200, runtime::to_json(runtime::estimate_from_parameters(
                    std::get<runtime::parameter_request>(read))));
}

/// POST /api/estimate: the static memory estimate of a graph's training run, or of a parameter
/// count. Computed here from the layer shapes (microseconds, no tensor); never applied to a run: a
/// client that wants it as a budget sends it with memory_source "estimate".
void post_estimate(const httplib::Request& req, httplib::Response& res) {
  auto parsed = json_body(req, res);
  if (!parsed)
    return;
  auto& body = *parsed;
  if (body.is_object() && body.contains("parameters") && !body.contains("graph")) {
    post_parameter_estimate(body, res);
    return;
  }
  if (!body.is_object() || !body.contains("graph") || !body["graph"].is_object()) {
    refuse(res, 422, "the body must be a JSON object {\"graph\": {...}}, optionally with "
                     "\"device\" and \"cards\", or {\"parameters\": N}, optionally with "
                     "\"precision\", \"optimizer\", \"trainable\" and \"state_precision\"");
    return;
  }
  if (body.contains("parameters")) {
    refuse(res, 400, "give graph or parameters, not both: they are two different estimates");
    return;
  }
  for (const auto& [field, unused] : body.items())
    if (field != "graph" && field != "device" && field != "cards") {
      refuse(res, 400, "field '" + field + "' is not known (known: graph, device, cards)");
      return;
    }
  runtime::estimate_options options;
  if (body.contains("device")) {
    if (!body["device"].is_string()) {
      refuse(res, 400, "field 'device' must be a string such as \"cuda:0\"");
      return;
    }
    options.device = body["device"].get<std::string>();
    auto parsed = devices::parse_device(options.device);
    if (auto* bad = std::get_if<devices::device_parse_error>(&parsed)) {
      refuse(res, 400, "field 'device': " + bad->message);
      return;
    }
  }
  if (body.contains("cards")) {
    const auto& cards = body["cards"];
    if (!cards.is_number_integer() || cards.get<std::int64_t>() < 1 || cards.get<std::int64_t>() > 1024) {
      refuse(res, 400, "field 'cards' must be an integer from 1 to 1024");
      return;
    }
    options.cards = cards.get<std::int64_t>();
  }
  auto checked = runtime::validate_graph(body["graph"]);
  if (const auto* errors = std::get_if<std::vector<runtime::graph_error>>(&checked)) {
    json listed = json::array();
    for (const auto& e : *errors)
      listed.push_back({{"node", e.node}, {"field", e.field}, {"message", e.message}});
    reply(res, 400, {{"detail", runtime::to_string(*errors)}, {"errors", listed}});
    return;
  }
  reply(res, 200, runtime::to_json(runtime::estimate_memory(std::get<runtime::validated_graph>(checked),
                                                            options)));
}

} // namespace

void add_estimate_routes(route_table& routes) {
  routes.post("/api/estimate", [](const httplib::Request& req, httplib::Response& res) { post_estimate(req, res); });
}

} // namespace cdui::apps
