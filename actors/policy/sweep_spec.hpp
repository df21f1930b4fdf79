#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace cdui::policy {

/// The most variants a sweep may have unless CODEFYUI_MAX_SWEEP_RUNS says otherwise (issue 16:
/// "default 1,000"); a larger sweep is refused, never truncated.
inline constexpr std::uint64_t default_max_sweep_runs = 1000;
inline constexpr const char* max_sweep_runs_env = "CODEFYUI_MAX_SWEEP_RUNS";

/// One param a sweep varies: a node's param, over a list of values or a range.
struct sweep_param {
  std::string node;
  std::string param;
  /// The values to try, as given (a list); empty for a range.
  std::vector<nlohmann::json> values;
  /// A range [min, max]: on a linear or log scale, of floats or ints.
  double min = 0;
  double max = 0;
  bool log = false;
  bool integer = false;
  /// How many points of a range a grid takes (evenly spaced on its scale); 0: not given.
  std::uint64_t count = 0;
  [[nodiscard]] bool is_range() const { return values.empty(); }
  /// "node.param", as tables and CSV headers name it.
  [[nodiscard]] std::string label() const { return node + "." + param; }
};

/// A sweep's spec: grid (the cartesian product, last param fastest) or random (`samples` draws,
/// the same for a seed).
struct sweep_spec {
  enum class method { grid, random };
  method how = method::grid;
  std::vector<sweep_param> params;
  std::uint64_t samples = 0;
  bool has_seed = false;
  std::uint64_t seed = 0;
};

/// What a sweep ranks its variants by: a metric of their final metrics, smaller or larger better.
struct sweep_objective {
  /// "name" (the first node, by id, that reports it) or "node.name".
  std::string metric;
  bool maximize = false;
};

/// One param of one variant set to one value.
struct param_setting {
  std::string node;
  std::string param;
  nlohmann::json value;
};
using variant_params = std::vector<param_setting>;

/// Reads `spec` of a POST /api/sweeps body; the refusal names the field (`spec.params[1].scale:
/// must be "linear" or "log"`).
[[nodiscard]] std::variant<sweep_spec, std::string> parse_sweep_spec(const nlohmann::json& spec);

/// The first field of `object` that is not in `fields`, as a refusal under `where` (`spec: unknown
/// field 'x' (known: ...)`); empty if none.
[[nodiscard]] std::string unknown_field(const nlohmann::json& object, const std::set<std::string>& fields,
                                        const std::string& where);

/// Reads a list of params (a sweep's spec.params, a study's space) at `where`; `grid`: a range
/// needs its count. The refusal names the field (`space[1].scale: ...`).
[[nodiscard]] std::variant<std::vector<sweep_param>, std::string>
parse_sweep_params(const nlohmann::json& params, const std::string& where, bool grid);

/// Reads `objective` {metric, direction: "min"|"max"}; the refusal names the field.
/// The longest objective.metric a sweep or a study takes: a node id, a dot and a metric's name fit
/// many times over; a longer one (a 1 MB name was stored, issue 33) names nothing a run reports.
inline constexpr std::size_t max_metric_name_length = 256;

[[nodiscard]] std::variant<sweep_objective, std::string> parse_objective(const nlohmann::json& objective);

/// The spec as JSON, its seed included when it has one: what the store keeps and GET shows.
[[nodiscard]] nlohmann::json spec_json(const sweep_spec& spec);
[[nodiscard]] nlohmann::json objective_json(const sweep_objective& objective);
/// Params as JSON, as parse_sweep_params reads them back.
[[nodiscard]] nlohmann::json params_spec_json(const std::vector<sweep_param>& space);

/// How many variants the spec makes (saturating at UINT64_MAX), without making them.
[[nodiscard]] std::uint64_t variant_count(const sweep_spec& spec);

/// The refusal of a sweep of `count` variants when `max` is the limit; empty when it fits.
[[nodiscard]] std::string limit_refusal(std::uint64_t count, std::uint64_t max);

/// Every variant's settings, in order: a grid's product with the last param fastest, or a random
/// sweep's `samples` draws from a generator seeded with `spec.seed` (the same on every machine).
/// Call after limit_refusal said the count fits.
[[nodiscard]] std::vector<variant_params> expand(const sweep_spec& spec);

/// A variant's settings as {"node.param": value}.
[[nodiscard]] nlohmann::json params_json(const variant_params& params);

class sweep_random;

/// A range's value at `x` (on its linear axis): clamped to [min, max], rounded for an int.
[[nodiscard]] nlohmann::json range_value(const sweep_param& p, double x);

/// One random draw of a param: a value of its list, or a point of its range, uniform on its scale
/// (an int on a log scale: each whole number's share of the log axis, as Optuna draws it).
[[nodiscard]] nlohmann::json draw_value(const sweep_param& p, sweep_random& rng);

/// Sets `node`'s param in `graph` (a graph JSON object). The refusal names the node and the
/// graph's nodes; empty when set. A param the node does not take is left for validation, which
/// names the params it takes.
[[nodiscard]] std::string set_node_param(nlohmann::json& graph, const std::string& node,
                                         const std::string& param, const nlohmann::json& value);

/// SplitMix64 (Steele, Lea, Flood 2014): a generator whose draws are the same with every standard
/// library, unlike std::uniform_real_distribution.
class sweep_random {
public:
  explicit sweep_random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  /// Uniform in [0, 1), 53 bits.
  double uniform();
  /// Uniform in [0, n).
  std::uint64_t below(std::uint64_t n);

private:
  std::uint64_t state_;
};

} // namespace cdui::policy
