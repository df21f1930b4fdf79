#include "actors/policy/sweep_request.hpp"

#include <algorithm>

#include "messages/json_text.hpp"

namespace cdui::policy {

using nlohmann::json;

std::variant<run_request, submission_error> parse_search_base(const json& body, const std::vector<std::string>& own,
                                                             const std::string& shape, const std::string& whose) {
  if (!body.is_object())
    return submission_error{true, "the body must be a JSON object {\"graph\": {...}, " + shape + "}"};
  json run = json::object();
  for (const auto& [key, value] : body.items()) {
    if (key == "graph" || key == "options" || key == "name") {
      run[key] = value;
    } else if (std::find(own.begin(), own.end(), key) == own.end()) {
      std::string known = "graph, name";
      for (const auto& f : own)
        known += ", " + f;
      return submission_error{false, "field '" + key + "' is not known (known: " + known + ", options)"};
    }
  }
  auto parsed = parse_submission(run);
  if (auto* bad = std::get_if<submission_error>(&parsed))
    return *bad;
  if (std::get<run_request>(parsed).lane == run_lane::interactive)
    return submission_error{false, "option 'lane': " + whose + " are queued runs; \"interactive\" is for one run "
                                   "from the editor"};
  return parsed;
}

std::variant<sweep_objective, submission_error> parse_body_objective(const json& body) {
  if (!body.contains("objective"))
    return submission_error{false, "field 'objective' is missing"};
  auto objective = parse_objective(body["objective"]);
  if (auto* bad = std::get_if<std::string>(&objective))
    return submission_error{false, *bad};
  return std::get<sweep_objective>(std::move(objective));
}

std::variant<sweep_request, submission_error> parse_sweep_body(const json& body) {
  auto base = parse_search_base(body, {"spec", "objective"}, "\"spec\": {...}, \"objective\": {...}",
                                "a sweep's runs");
  if (auto* bad = std::get_if<submission_error>(&base))
    return *bad;
  sweep_request out;
  out.base = std::get<run_request>(std::move(base));
  if (!body.contains("spec"))
    return submission_error{false, "field 'spec' is missing"};
  auto spec = parse_sweep_spec(body["spec"]);
  if (auto* bad = std::get_if<std::string>(&spec))
    return submission_error{false, *bad};
  out.spec = std::get<sweep_spec>(std::move(spec));
  auto objective = parse_body_objective(body);
  if (auto* bad = std::get_if<submission_error>(&objective))
    return *bad;
  out.objective = std::get<sweep_objective>(std::move(objective));
  return out;
}

std::variant<std::vector<run_request>, std::string>
variant_runs(const run_request& base, const std::vector<variant_params>& variants, const std::string& name,
             std::size_t first, const std::string& where) {
  auto graph = json::parse(base.graph_json, nullptr, false);
  std::vector<run_request> out;
  out.reserve(variants.size());
  for (std::size_t i = 0; i < variants.size(); ++i) {
    auto copy = graph;
    for (std::size_t k = 0; k < variants[i].size(); ++k) {
      const auto& s = variants[i][k];
      if (auto why = set_node_param(copy, s.node, s.param, s.value); !why.empty())
        return where + "[" + std::to_string(k) + "].node: " + why;
    }
    auto& r = out.emplace_back(base);
    r.graph_json = json_text(copy);
    r.name = name + " #" + std::to_string(first + i);
  }
  return out;
}

} // namespace cdui::policy
