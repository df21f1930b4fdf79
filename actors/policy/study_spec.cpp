#include "actors/policy/study_spec.hpp"

#include "actors/policy/sweep_request.hpp"

#include <cmath>
#include <cstdio>
#include <set>

namespace cdui::policy {

namespace {

using nlohmann::json;

/// The most concurrent trials a study may ask for: far more than any server's slots.
constexpr std::uint64_t max_parallel_limit = 10'000;

/// A whole number from `min` to `max` at `where` into `out`; the refusal names the field.
std::string read_whole(const json& j, const std::string& where, std::int64_t min, std::int64_t max,
                       std::int64_t& out) {
  if (!j.is_number_integer() || j.get<std::int64_t>() < min || j.get<std::int64_t>() > max
      || (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(max)))
    return where + ": must be a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  out = j.get<std::int64_t>();
  return "";
}

template <class T>
std::string read_setting(const json& j, const std::string& where, std::int64_t min, std::int64_t max, T& out) {
  std::int64_t x = 0;
  if (auto bad = read_whole(j, where, min, max, x); !bad.empty())
    return bad;
  out = static_cast<T>(x);
  return "";
}

/// "name" or {name, settings...}: the name, and the object's other fields.
std::variant<std::pair<std::string, json>, std::string> named(const json& j, const std::string& where,
                                                             const std::string& names) {
  if (j.is_string())
    return std::pair{j.get<std::string>(), json::object()};
  if (j.is_object() && j.contains("name") && j["name"].is_string()) {
    auto settings = j;
    settings.erase("name");
    return std::pair{j["name"].get<std::string>(), settings};
  }
  return where + ": must be " + names + ", or an object {\"name\": ..., settings}";
}

std::string read_sampler(const json& j, study_spec& spec) {
  auto read = named(j, "sampler", "\"random\" or \"tpe\"");
  if (auto* bad = std::get_if<std::string>(&read))
    return *bad;
  auto& [name, settings] = std::get<std::pair<std::string, json>>(read);
  if (name == "random") {
    spec.sampler = sampler_kind::random;
    return unknown_field(settings, {}, "sampler");
  }
  if (name != "tpe")
    return "sampler.name: must be \"random\" or \"tpe\"";
  spec.sampler = sampler_kind::tpe;
  if (auto bad = unknown_field(settings, {"n_startup_trials", "n_ei_candidates", "prior_weight"}, "sampler");
      !bad.empty())
    return bad;
  if (settings.contains("n_startup_trials"))
    if (auto bad = read_setting(settings["n_startup_trials"], "sampler.n_startup_trials", 0, 1'000'000,
                                spec.tpe.n_startup_trials);
        !bad.empty())
      return bad;
  if (settings.contains("n_ei_candidates"))
    if (auto bad = read_setting(settings["n_ei_candidates"], "sampler.n_ei_candidates", 1, 10'000,
                                spec.tpe.n_ei_candidates);
        !bad.empty())
      return bad;
  if (settings.contains("prior_weight")) {
    const auto& w = settings["prior_weight"];
    if (!w.is_number() || !(w.get<double>() > 0) || !std::isfinite(w.get<double>()))
      return "sampler.prior_weight: must be a number above 0";
    spec.tpe.prior_weight = w.get<double>();
  }
  return "";
}

std::string read_pruner(const json& j, study_spec& spec) {
  auto read = named(j, "pruner", "\"none\", \"median\" or \"asha\"");
  if (auto* bad = std::get_if<std::string>(&read))
    return *bad;
  auto& [name, settings] = std::get<std::pair<std::string, json>>(read);
  if (name == "none") {
    spec.pruner = pruner_kind::none;
    return unknown_field(settings, {}, "pruner");
  }
  if (name == "median") {
    spec.pruner = pruner_kind::median;
    if (auto bad = unknown_field(settings, {"n_startup_trials", "n_warmup_steps", "interval_steps"}, "pruner");
        !bad.empty())
      return bad;
    auto& m = spec.median;
    for (auto [field, min, out] : {std::tuple{"n_startup_trials", 0, &m.n_startup_trials}}) {
      if (settings.contains(field))
        if (auto bad = read_setting(settings[field], std::string{"pruner."} + field, min, 1'000'000, *out);
            !bad.empty())
          return bad;
    }
    for (auto [field, min, out] : {std::tuple{"n_warmup_steps", 0, &m.n_warmup_steps},
                                   std::tuple{"interval_steps", 1, &m.interval_steps}}) {
      if (settings.contains(field))
        if (auto bad = read_setting(settings[field], std::string{"pruner."} + field, min, 1'000'000, *out);
            !bad.empty())
          return bad;
    }
    return "";
  }
  if (name != "asha")
    return "pruner.name: must be \"none\", \"median\" or \"asha\"";
  spec.pruner = pruner_kind::asha;
  if (auto bad = unknown_field(settings, {"min_resource", "reduction_factor", "min_early_stopping_rate"}, "pruner");
      !bad.empty())
    return bad;
  auto& a = spec.asha;
  if (settings.contains("min_resource"))
    if (auto bad = read_setting(settings["min_resource"], "pruner.min_resource", 1, 1'000'000, a.min_resource);
        !bad.empty())
      return bad;
  if (settings.contains("reduction_factor"))
    if (auto bad = read_setting(settings["reduction_factor"], "pruner.reduction_factor", 2, 1'000, a.reduction_factor);
        !bad.empty())
      return bad;
  if (settings.contains("min_early_stopping_rate"))
    if (auto bad = read_setting(settings["min_early_stopping_rate"], "pruner.min_early_stopping_rate", 0, 30,
                                a.min_early_stopping_rate);
        !bad.empty())
      return bad;
  return "";
}

std::string read_budget(const json& j, study_spec& spec) {
  if (!j.is_object())
    return "budget: must be an object {trials, max_parallel?}";
  if (auto bad = unknown_field(j, {"trials", "max_parallel"}, "budget"); !bad.empty())
    return bad;
  if (!j.contains("trials"))
    return "budget.trials: is missing (how many trials the study runs)";
  if (auto bad = read_setting(j["trials"], "budget.trials", 1, 1'000'000'000, spec.trials); !bad.empty())
    return bad;
  if (j.contains("max_parallel"))
    if (auto bad = read_setting(j["max_parallel"], "budget.max_parallel", 1,
                                static_cast<std::int64_t>(max_parallel_limit), spec.max_parallel);
        !bad.empty())
      return bad;
  return "";
}

} // namespace

std::variant<study_spec, std::string> parse_study_spec(const json& j) {
  study_spec spec;
  if (!j.contains("space"))
    return std::string{"field 'space' is missing"};
  auto space = parse_sweep_params(j["space"], "space", false);
  if (auto* bad = std::get_if<std::string>(&space))
    return *bad;
  spec.space = std::get<std::vector<sweep_param>>(std::move(space));
  if (!j.contains("budget"))
    return std::string{"field 'budget' is missing"};
  if (auto bad = read_budget(j["budget"], spec); !bad.empty())
    return bad;
  if (j.contains("sampler"))
    if (auto bad = read_sampler(j["sampler"], spec); !bad.empty())
      return bad;
  if (j.contains("pruner"))
    if (auto bad = read_pruner(j["pruner"], spec); !bad.empty())
      return bad;
  if (j.contains("seed")) {
    if (!j["seed"].is_number_unsigned() && !(j["seed"].is_number_integer() && j["seed"].get<std::int64_t>() >= 0))
      return std::string{"seed: must be a whole number from 0 to 18446744073709551615"};
    spec.has_seed = true;
    spec.seed = j["seed"].get<std::uint64_t>();
  }
  return spec;
}

json study_spec_json(const study_spec& spec) {
  json sampler = spec.sampler == sampler_kind::random
                   ? json{{"name", "random"}}
                   : json{{"name", "tpe"},
                          {"n_startup_trials", spec.tpe.n_startup_trials},
                          {"n_ei_candidates", spec.tpe.n_ei_candidates},
                          {"prior_weight", spec.tpe.prior_weight}};
  json pruner{{"name", "none"}};
  if (spec.pruner == pruner_kind::median)
    pruner = {{"name", "median"},
              {"n_startup_trials", spec.median.n_startup_trials},
              {"n_warmup_steps", spec.median.n_warmup_steps},
              {"interval_steps", spec.median.interval_steps}};
  else if (spec.pruner == pruner_kind::asha)
    pruner = {{"name", "asha"},
              {"min_resource", spec.asha.min_resource},
              {"reduction_factor", spec.asha.reduction_factor},
              {"min_early_stopping_rate", spec.asha.min_early_stopping_rate}};
  json out{{"space", params_spec_json(spec.space)},
           {"budget", {{"trials", spec.trials}, {"max_parallel", spec.max_parallel}}},
           {"sampler", sampler},
           {"pruner", pruner}};
  if (spec.has_seed)
    out["seed"] = spec.seed;
  return out;
}

std::variant<study_request, submission_error> parse_study_body(const json& body) {
  auto base = parse_search_base(body, {"space", "objective", "budget", "sampler", "pruner", "seed"},
                                "\"space\": [...], \"objective\": {...}, \"budget\": {...}", "a study's trials");
  if (auto* bad = std::get_if<submission_error>(&base))
    return *bad;
  study_request out;
  out.base = std::get<run_request>(std::move(base));
  auto spec = parse_study_spec(body);
  if (auto* bad = std::get_if<std::string>(&spec))
    return submission_error{false, *bad};
  out.spec = std::get<study_spec>(std::move(spec));
  auto objective = parse_body_objective(body);
  if (auto* bad = std::get_if<submission_error>(&objective))
    return *bad;
  out.objective = std::get<sweep_objective>(std::move(objective));
  return out;
}

std::string value_text(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", x);
  return text;
}

const char* to_string(trial_state s) {
  switch (s) {
    case trial_state::running: return "running";
    case trial_state::complete: return "complete";
    case trial_state::pruned: return "pruned";
    case trial_state::failed: return "failed";
  }
  return "failed";
}

trial_state trial_state_of(run_status status) {
  switch (status) {
    case run_status::succeeded: return trial_state::complete;
    case run_status::pruned: return trial_state::pruned;
    case run_status::failed:
    case run_status::cancelled: return trial_state::failed;
    default: return trial_state::running;
  }
}

} // namespace cdui::policy
