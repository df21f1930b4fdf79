#include "actors/policy/sweep_spec.hpp"

#include <cmath>
#include <limits>
#include <set>

#include "messages/text.hpp"

namespace cdui::policy {

namespace {

using nlohmann::json;

/// The most points one range of a grid may have: past any sweep limit, and small enough to list.
constexpr std::uint64_t max_range_count = 1'000'000;

const std::set<std::string> spec_fields{"method", "params", "samples", "seed"};
const std::set<std::string> param_fields{"node", "param", "values", "min", "max", "scale", "type", "count"};

/// A whole number of at least `min` (a JSON integer, or a float with no fraction).
std::optional<std::uint64_t> whole_number(const json& j, std::uint64_t min) {
  if (j.is_number_unsigned())
    return j.get<std::uint64_t>() >= min ? std::optional{j.get<std::uint64_t>()} : std::nullopt;
  if (j.is_number_integer())
    return j.get<std::int64_t>() >= static_cast<std::int64_t>(min)
             ? std::optional{static_cast<std::uint64_t>(j.get<std::int64_t>())}
             : std::nullopt;
  return std::nullopt;
}

std::optional<double> finite_number(const json& j) {
  if (!j.is_number())
    return std::nullopt;
  auto x = j.get<double>();
  return std::isfinite(x) ? std::optional{x} : std::nullopt;
}

/// Reads a range's min, max, scale, type and count into `p`; the refusal names the field.
std::string read_range(const json& j, const std::string& where, sweep_param& p) {
  if (!j.contains("min") || !j.contains("max"))
    return where + ": give values (a list) or a range with min and max";
  auto min = finite_number(j["min"]);
  auto max = finite_number(j["max"]);
  if (!min)
    return where + ".min: must be a number";
  if (!max)
    return where + ".max: must be a number";
  if (*max < *min)
    return where + ".max: must be at least min (" + j["min"].dump() + ")";
  p.min = *min;
  p.max = *max;
  auto scale = j.value("scale", json("linear"));
  if (scale != "linear" && scale != "log")
    return where + ".scale: must be \"linear\" or \"log\"";
  p.log = scale == "log";
  auto type = j.value("type", json("float"));
  if (type != "float" && type != "int")
    return where + ".type: must be \"float\" or \"int\"";
  p.integer = type == "int";
  if (p.integer && (p.min != std::floor(p.min) || std::abs(p.min) > 9e15))
    return where + ".min: must be a whole number for type \"int\"";
  if (p.integer && (p.max != std::floor(p.max) || std::abs(p.max) > 9e15))
    return where + ".max: must be a whole number for type \"int\"";
  if (p.log && p.min <= 0)
    return where + ".min: must be above 0 on a log scale";
  if (j.contains("count")) {
    auto count = whole_number(j["count"], 1);
    if (!count || *count > max_range_count)
      return where + ".count: must be a whole number from 1 to " + std::to_string(max_range_count);
    p.count = *count;
  }
  return "";
}

/// Reads spec.params[i].
std::variant<sweep_param, std::string> read_param(const json& j, const std::string& where, bool grid) {
  if (!j.is_object())
    return where + ": must be an object {node, param, values} or {node, param, min, max, scale, type, count}";
  if (auto bad = unknown_field(j, param_fields, where); !bad.empty())
    return bad;
  sweep_param p;
  for (const char* field : {"node", "param"}) {
    auto value = j.value(field, json());
    if (!value.is_string() || value.get_ref<const std::string&>().empty())
      return where + "." + field + ": must be a non-empty string";
    (std::string{field} == "node" ? p.node : p.param) = value.get<std::string>();
  }
  if (j.contains("values")) {
    for (const char* field : {"min", "max", "scale", "type", "count"})
      if (j.contains(field))
        return where + ": give either values or a range (min, max), not both ('" + field + "' with values)";
    const auto& values = j["values"];
    if (!values.is_array() || values.empty())
      return where + ".values: must be a list of at least one value";
    p.values.assign(values.begin(), values.end());
    return p;
  }
  if (auto bad = read_range(j, where, p); !bad.empty())
    return bad;
  if (grid && p.count == 0)
    return where + ".count: a grid needs count for a range (how many points from min to max)";
  return p;
}

/// A range's value at `t` in [0, 1] along its scale.
double along(const sweep_param& p, double t) {
  if (p.log)
    return std::exp(std::log(p.min) + t * (std::log(p.max) - std::log(p.min)));
  return p.min + t * (p.max - p.min);
}


/// The values a grid takes of one param: its list, or `count` points evenly spaced on the range's
/// scale from min to max (an int range's rounded, each value once).
std::vector<json> grid_values(const sweep_param& p) {
  if (!p.is_range())
    return p.values;
  std::vector<json> out;
  for (std::uint64_t i = 0; i < p.count; ++i) {
    double t = p.count == 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(p.count - 1);
    auto v = i + 1 == p.count && p.count > 1 ? range_value(p, p.max) : range_value(p, along(p, t));
    if (out.empty() || out.back() != v)
      out.push_back(std::move(v));
  }
  return out;
}

} // namespace

std::string unknown_field(const json& object, const std::set<std::string>& fields, const std::string& where) {
  for (const auto& [key, unused] : object.items())
    if (!fields.count(key)) {
      std::string known;
      for (const auto& f : fields)
        known += (known.empty() ? "" : ", ") + f;
      return where + ": unknown field '" + key + "' (known: " + known + ")";
    }
  return "";
}

json range_value(const sweep_param& p, double x) {
  x = std::min(std::max(x, p.min), p.max);
  if (p.integer)
    return json(static_cast<std::int64_t>(std::llround(x)));
  return json(x);
}

json draw_value(const sweep_param& p, sweep_random& rng) {
  if (!p.is_range())
    return p.values[rng.below(p.values.size())];
  if (!p.integer)
    return range_value(p, along(p, rng.uniform()));
  if (!p.log)
    return json(static_cast<std::int64_t>(p.min)
                + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(p.max - p.min) + 1)));
  // An int on a log scale: each whole number's share of the log axis, as Optuna draws it.
  double lo = std::log(p.min - 0.5), hi = std::log(p.max + 0.5);
  return range_value(p, std::exp(lo + rng.uniform() * (hi - lo)));
}

std::uint64_t sweep_random::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double sweep_random::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

std::uint64_t sweep_random::below(std::uint64_t n) {
  // Rejection keeps every value equally likely.
  auto limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
  for (;;)
    if (auto x = next(); x < limit)
      return x % n;
}

std::variant<std::vector<sweep_param>, std::string> parse_sweep_params(const json& params,
                                                                      const std::string& where, bool grid) {
  if (!params.is_array() || params.empty())
    return where + ": must be a list of at least one param";
  std::vector<sweep_param> out;
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto at = where + "[" + std::to_string(i) + "]";
    auto read = read_param(params[i], at, grid);
    if (auto* bad = std::get_if<std::string>(&read))
      return *bad;
    auto& p = std::get<sweep_param>(read);
    for (std::size_t k = 0; k < out.size(); ++k)
      if (out[k].node == p.node && out[k].param == p.param)
        return at + ": " + p.label() + " is swept already by " + where + "[" + std::to_string(k) + "]";
    out.push_back(std::move(p));
  }
  return out;
}

std::variant<sweep_spec, std::string> parse_sweep_spec(const json& j) {
  if (!j.is_object())
    return std::string{"spec: must be an object {method, params, samples?, seed?}"};
  if (auto bad = unknown_field(j, spec_fields, "spec"); !bad.empty())
    return bad;
  sweep_spec spec;
  auto method = j.value("method", json());
  if (method != "grid" && method != "random")
    return std::string{"spec.method: must be \"grid\" or \"random\""};
  spec.how = method == "grid" ? sweep_spec::method::grid : sweep_spec::method::random;
  bool grid = spec.how == sweep_spec::method::grid;
  auto params = parse_sweep_params(j.value("params", json()), "spec.params", grid);
  if (auto* bad = std::get_if<std::string>(&params))
    return *bad;
  spec.params = std::get<std::vector<sweep_param>>(std::move(params));
  if (j.contains("samples")) {
    if (grid)
      return std::string{"spec.samples: only for method \"random\" (a grid takes every combination)"};
    auto samples = whole_number(j["samples"], 1);
    if (!samples)
      return std::string{"spec.samples: must be a whole number of at least 1"};
    spec.samples = *samples;
  } else if (!grid) {
    return std::string{"spec.samples: a random sweep needs samples, how many variants to draw"};
  }
  if (j.contains("seed")) {
    auto seed = whole_number(j["seed"], 0);
    if (!seed)
      return std::string{"spec.seed: must be a whole number from 0 to 18446744073709551615"};
    spec.has_seed = true;
    spec.seed = *seed;
  }
  return spec;
}

std::variant<sweep_objective, std::string> parse_objective(const json& j) {
  if (!j.is_object())
    return std::string{"objective: must be an object {metric, direction: \"min\" | \"max\"}"};
  if (auto bad = unknown_field(j, {"metric", "direction"}, "objective"); !bad.empty())
    return bad;
  auto metric = j.value("metric", json());
  if (!metric.is_string() || metric.get_ref<const std::string&>().empty())
    return std::string{"objective.metric: must be a non-empty string (a final metric's name, or node.name)"};
  if (metric.get_ref<const std::string&>().size() > max_metric_name_length)
    return "objective.metric: at most " + std::to_string(max_metric_name_length) + " bytes (a metric's "
           "name, or node.name), got " + std::to_string(metric.get_ref<const std::string&>().size());
  auto direction = j.value("direction", json());
  if (direction != "min" && direction != "max")
    return std::string{"objective.direction: must be \"min\" or \"max\""};
  return sweep_objective{metric.get<std::string>(), direction == "max"};
}

json params_spec_json(const std::vector<sweep_param>& space) {
  json params = json::array();
  for (const auto& p : space) {
    json j{{"node", p.node}, {"param", p.param}};
    if (!p.is_range()) {
      j["values"] = p.values;
    } else {
      j["min"] = p.integer ? json(static_cast<std::int64_t>(p.min)) : json(p.min);
      j["max"] = p.integer ? json(static_cast<std::int64_t>(p.max)) : json(p.max);
      j["scale"] = p.log ? "log" : "linear";
      j["type"] = p.integer ? "int" : "float";
      if (p.count > 0)
        j["count"] = p.count;
    }
    params.push_back(std::move(j));
  }
  return params;
}

json spec_json(const sweep_spec& spec) {
  json out{{"method", spec.how == sweep_spec::method::grid ? "grid" : "random"},
           {"params", params_spec_json(spec.params)}};
  if (spec.how == sweep_spec::method::random)
    out["samples"] = spec.samples;
  if (spec.has_seed)
    out["seed"] = spec.seed;
  return out;
}

json objective_json(const sweep_objective& objective) {
  return {{"metric", objective.metric}, {"direction", objective.maximize ? "max" : "min"}};
}

std::uint64_t variant_count(const sweep_spec& spec) {
  if (spec.how == sweep_spec::method::random)
    return spec.samples;
  std::uint64_t n = 1;
  for (const auto& p : spec.params) {
    auto k = static_cast<std::uint64_t>(grid_values(p).size());
    if (n > std::numeric_limits<std::uint64_t>::max() / k)
      return std::numeric_limits<std::uint64_t>::max();
    n *= k;
  }
  return n;
}

std::string limit_refusal(std::uint64_t count, std::uint64_t max) {
  if (count <= max)
    return "";
  return "the sweep has " + std::to_string(count) + " variants, more than the " + std::to_string(max)
         + " a sweep may have (" + max_sweep_runs_env + "); nothing was queued: narrow the spec or "
           "raise the limit";
}

std::vector<variant_params> expand(const sweep_spec& spec) {
  std::vector<variant_params> out;
  if (spec.how == sweep_spec::method::random) {
    sweep_random rng{spec.seed};
    out.reserve(spec.samples);
    for (std::uint64_t s = 0; s < spec.samples; ++s) {
      variant_params v;
      for (const auto& p : spec.params)
        v.push_back({p.node, p.param, draw_value(p, rng)});
      out.push_back(std::move(v));
    }
    return out;
  }
  std::vector<std::vector<json>> axes;
  for (const auto& p : spec.params)
    axes.push_back(grid_values(p));
  // An odometer over the axes, the last one turning fastest.
  std::vector<std::size_t> at(axes.size(), 0);
  for (;;) {
    variant_params v;
    for (std::size_t i = 0; i < axes.size(); ++i)
      v.push_back({spec.params[i].node, spec.params[i].param, axes[i][at[i]]});
    out.push_back(std::move(v));
    std::size_t i = axes.size();
    while (i > 0 && ++at[i - 1] == axes[i - 1].size())
      at[--i] = 0;
    if (i == 0)
      return out;
  }
}

json params_json(const variant_params& params) {
  json out = json::object();
  for (const auto& s : params)
    out[s.node + "." + s.param] = s.value;
  return out;
}

std::string set_node_param(json& graph, const std::string& node, const std::string& param,
                           const json& value) {
  if (!graph.is_object() || !graph.contains("nodes") || !graph["nodes"].is_array())
    return "the graph has no \"nodes\" list";
  json* found = nullptr;
  std::string ids;
  for (auto& n : graph["nodes"]) {
    if (!n.is_object() || !n.contains("id") || !n["id"].is_string())
      continue;
    const auto& id = n["id"].get_ref<const std::string&>();
    ids += (ids.empty() ? "" : ", ") + id;
    if (id == node && found == nullptr)
      found = &n;
  }
  if (found == nullptr)
    return "the graph has no node " + text::quoted(node) + " (its nodes: " + ids + ")";
  auto& params = (*found)["params"];
  if (params.is_null())
    params = json::object();
  if (!params.is_object())
    return "node " + text::quoted(node) + " has \"params\" that are not an object";
  params[param] = value;
  return "";
}

} // namespace cdui::policy
