#pragma once

#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/policy/run_options.hpp"
#include "actors/policy/sweep_spec.hpp"
#include "messages/run_request.hpp"

namespace cdui::policy {

/// A POST /api/sweeps body, read: what every variant's run shares (`base`: the graph, the
/// options, the sweep's name), the spec and the objective.
struct sweep_request {
  run_request base;
  sweep_spec spec;
  sweep_objective objective;
};

/// What a sweep's or a study's body shares: {graph, name?, options?} read as a run's submission,
/// with `own` the other fields it knows, in the order refusals list them (any other is refused), `shape` those fields as the
/// refusal of a body that is no object shows them, and `whose` ("a sweep's runs") for the refusal
/// of the interactive lane.
[[nodiscard]] std::variant<run_request, submission_error>
parse_search_base(const nlohmann::json& body, const std::vector<std::string>& own, const std::string& shape,
                  const std::string& whose);

/// The body's `objective`, read; the refusal names the field.
[[nodiscard]] std::variant<sweep_objective, submission_error> parse_body_objective(const nlohmann::json& body);

/// Reads {graph, name?, spec, objective, options?}; the refusal names the field (422 for a
/// missing graph or one that is not an object, as for a run). Options are a run's options, read
/// the same way; the interactive lane is refused, since a sweep's runs are queued runs.
[[nodiscard]] std::variant<sweep_request, submission_error> parse_sweep_body(const nlohmann::json& body);

/// Each variant's run: `base` with a copy of its graph whose swept params are set, named
/// "<name> #<i>" (from `first`: a study's trial number). The refusal names the param
/// (`<where>[k].node: ...`) whose node the graph lacks.
[[nodiscard]] std::variant<std::vector<run_request>, std::string>
variant_runs(const run_request& base, const std::vector<variant_params>& variants, const std::string& name,
             std::size_t first = 0, const std::string& where = "spec.params");

} // namespace cdui::policy
