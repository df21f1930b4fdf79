#include "actors/policy/tpe_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cdui::policy {

namespace {

using nlohmann::json;

constexpr double pi = 3.14159265358979323846;

/// Optuna's gamma: the good share, at most 25 trials.
std::size_t good_count(std::size_t n) {
  return std::min<std::size_t>(static_cast<std::size_t>(std::ceil(0.1 * static_cast<double>(n))), 25);
}

/// Optuna's default weights over trials oldest first: 1 each up to 25, beyond that a ramp from
/// 1/n up to 1 for the older ones and 1 for the newest 25.
std::vector<double> age_weights(std::size_t n) {
  std::vector<double> w(n, 1.0);
  if (n < 25)
    return w;
  std::size_t ramp = n - 25;
  for (std::size_t i = 0; i < ramp; ++i)
    w[i] = ramp == 1 ? 1.0 / static_cast<double>(n)
                     : 1.0 / static_cast<double>(n)
                         + (1.0 - 1.0 / static_cast<double>(n)) * static_cast<double>(i) / static_cast<double>(ramp - 1);
  return w;
}

double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

/// A standard normal draw (Box-Muller over our own uniforms).
double normal_draw(sweep_random& rng) {
  double u1 = 1.0 - rng.uniform();  // (0, 1]
  double u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * pi * u2);
}

/// A mixture of normals truncated to [low, high], on the param's axis (log for a log scale).
struct parzen {
  std::vector<double> mus, sigmas, weights;
  double low = 0, high = 1;

  [[nodiscard]] double log_pdf(double x) const {
    double p = 0;
    for (std::size_t i = 0; i < mus.size(); ++i) {
      double z = (x - mus[i]) / sigmas[i];
      double mass = normal_cdf((high - mus[i]) / sigmas[i]) - normal_cdf((low - mus[i]) / sigmas[i]);
      p += weights[i] * std::exp(-0.5 * z * z) / (sigmas[i] * std::sqrt(2 * pi) * std::max(mass, 1e-300));
    }
    return std::log(std::max(p, 1e-300));
  }

  [[nodiscard]] double draw(sweep_random& rng) const {
    double u = rng.uniform(), acc = 0;
    std::size_t k = 0;
    for (; k + 1 < weights.size(); ++k)
      if ((acc += weights[k]) > u)
        break;
    // Rejection: the mean lies in [low, high] and the width is at most high - low, so at least
    // about a sixth of the mass does too.
    for (int tries = 0; tries < 1000; ++tries)
      if (double x = mus[k] + sigmas[k] * normal_draw(rng); x >= low && x <= high)
        return x;
    return std::min(std::max(mus[k], low), high);
  }
};

/// Optuna's univariate estimator: the observations and the prior (the middle, as wide as the
/// range), each as wide as the larger gap to its neighbours (the outermost ones: the inner gap),
/// clipped to [range / min(100, 1 + count), range].
parzen estimator(const std::vector<double>& obs, const std::vector<double>& obs_weights, double low, double high,
                 double prior_weight) {
  parzen e;
  e.low = low;
  e.high = high;
  e.mus = obs;
  e.mus.push_back(0.5 * (low + high));
  std::size_t n = e.mus.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return e.mus[a] < e.mus[b]; });
  std::vector<double> sorted{low};
  for (auto i : order)
    sorted.push_back(e.mus[i]);
  sorted.push_back(high);
  e.sigmas.assign(n, high - low);
  for (std::size_t k = 0; k < n; ++k) {
    double left = sorted[k + 1] - sorted[k], right = sorted[k + 2] - sorted[k + 1];
    double sigma = std::max(left, right);
    if (n >= 2 && k == 0)
      sigma = right;
    else if (n >= 2 && k + 1 == n)
      sigma = left;
    e.sigmas[order[k]] = sigma;
  }
  double max_sigma = high - low;
  double min_sigma = (high - low) / std::min(100.0, 1.0 + static_cast<double>(n));
  for (auto& s : e.sigmas)
    s = std::min(std::max(s, min_sigma), max_sigma);
  e.sigmas.back() = high - low;  // the prior
  e.weights = obs_weights;
  e.weights.push_back(prior_weight);
  double total = 0;
  for (auto w : e.weights)
    total += w;
  for (auto& w : e.weights)
    w /= total;
  if (!(max_sigma > 0))  // a range of one point
    for (auto& s : e.sigmas)
      s = 1.0;
  return e;
}

/// A list's values weighted by the observations plus the prior spread over all of them.
std::vector<double> category_weights(const std::vector<std::size_t>& obs, const std::vector<double>& obs_weights,
                                     std::size_t choices, double prior_weight) {
  std::vector<double> w(choices, prior_weight / static_cast<double>(choices));
  for (std::size_t i = 0; i < obs.size(); ++i)
    w[obs[i]] += obs_weights[i];
  double total = 0;
  for (auto x : w)
    total += x;
  for (auto& x : w)
    x /= total;
  return w;
}

/// A param's value on its axis: the index of a list's value, the log of a log range's.
std::optional<double> on_axis(const sweep_param& p, const json& value) {
  if (!p.is_range()) {
    for (std::size_t i = 0; i < p.values.size(); ++i)
      if (p.values[i] == value)
        return static_cast<double>(i);
    return std::nullopt;
  }
  if (!value.is_number())
    return std::nullopt;
  double x = value.get<double>();
  if (p.log)
    return x > 0 ? std::optional{std::log(x)} : std::nullopt;
  return x;
}

/// A range's bounds on its axis; an int's reach half a unit beyond, so each whole number has its
/// share (Optuna's int distributions do the same).
std::pair<double, double> axis_bounds(const sweep_param& p) {
  double lo = p.integer ? p.min - 0.5 : p.min, hi = p.integer ? p.max + 0.5 : p.max;
  if (p.log)
    return {std::log(std::max(lo, p.min * 0.5)), std::log(hi)};
  return {lo, hi};
}

json from_axis(const sweep_param& p, double x) {
  return range_value(p, p.log ? std::exp(x) : x);
}

/// The trials with a result, best first: complete ones by value, then pruned ones by their last
/// step (later first) and last value.
std::vector<const trial*> ranked(const std::vector<trial>& trials, bool maximize) {
  auto better = [maximize](double a, double b) { return maximize ? a > b : a < b; };
  std::vector<const trial*> complete, pruned;
  for (const auto& t : trials) {
    if (t.state == trial_state::complete && t.value)
      complete.push_back(&t);
    else if (t.state == trial_state::pruned && !t.intermediate.empty())
      pruned.push_back(&t);
  }
  std::stable_sort(complete.begin(), complete.end(),
                   [&](const trial* a, const trial* b) { return better(*a->value, *b->value); });
  std::stable_sort(pruned.begin(), pruned.end(), [&](const trial* a, const trial* b) {
    auto la = *a->intermediate.rbegin(), lb = *b->intermediate.rbegin();
    if (la.first != lb.first)
      return la.first > lb.first;
    return better(la.second, lb.second);
  });
  complete.insert(complete.end(), pruned.begin(), pruned.end());
  return complete;
}

/// `group` in trial order with Optuna's age weights.
std::pair<std::vector<const trial*>, std::vector<double>> weighted(std::vector<const trial*> group) {
  std::stable_sort(group.begin(), group.end(), [](auto a, auto b) { return a->number < b->number; });
  return {group, age_weights(group.size())};
}

const json* value_of(const trial& t, const sweep_param& p) {
  for (const auto& s : t.params)
    if (s.node == p.node && s.param == p.param)
      return &s.value;
  return nullptr;
}

/// The observations of `p` in `group` on its axis, with their weights.
template <class Convert>
auto observations(const std::vector<const trial*>& group, const std::vector<double>& weights, const sweep_param& p,
                  Convert convert) {
  std::vector<decltype(convert(0.0))> obs;
  std::vector<double> w;
  for (std::size_t i = 0; i < group.size(); ++i)
    if (const auto* v = value_of(*group[i], p))
      if (auto x = on_axis(p, *v)) {
        obs.push_back(convert(*x));
        w.push_back(weights[i]);
      }
  return std::pair{obs, w};
}

json tpe_value(const sweep_param& p, const tpe_settings& tpe, const std::vector<const trial*>& good,
               const std::vector<double>& good_w, const std::vector<const trial*>& bad,
               const std::vector<double>& bad_w, sweep_random& rng) {
  if (!p.is_range()) {
    auto index = [](double x) { return static_cast<std::size_t>(x); };
    auto [lo, lw] = observations(good, good_w, p, index);
    auto [go, gw] = observations(bad, bad_w, p, index);
    auto l = category_weights(lo, lw, p.values.size(), tpe.prior_weight);
    auto g = category_weights(go, gw, p.values.size(), tpe.prior_weight);
    std::size_t best = 0;
    double best_score = -std::numeric_limits<double>::infinity();
    for (std::uint64_t c = 0; c < tpe.n_ei_candidates; ++c) {
      double u = rng.uniform(), acc = 0;
      std::size_t k = 0;
      for (; k + 1 < l.size(); ++k)
        if ((acc += l[k]) > u)
          break;
      if (double score = std::log(l[k]) - std::log(g[k]); score > best_score) {
        best_score = score;
        best = k;
      }
    }
    return p.values[best];
  }
  auto same = [](double x) { return x; };
  auto [low, high] = axis_bounds(p);
  auto [lo, lw] = observations(good, good_w, p, same);
  auto [go, gw] = observations(bad, bad_w, p, same);
  auto l = estimator(lo, lw, low, high, tpe.prior_weight);
  auto g = estimator(go, gw, low, high, tpe.prior_weight);
  double best = l.draw(rng), best_score = -std::numeric_limits<double>::infinity();
  for (std::uint64_t c = 0; c < tpe.n_ei_candidates; ++c) {
    double x = c == 0 ? best : l.draw(rng);
    if (double score = l.log_pdf(x) - g.log_pdf(x); score > best_score) {
      best_score = score;
      best = x;
    }
  }
  return from_axis(p, best);
}

} // namespace

sweep_random trial_random(std::uint64_t seed, std::uint64_t number) {
  sweep_random mix{seed ^ (0xd1b54a32d192ed03ULL * (number + 1))};
  return sweep_random{mix.next()};
}

variant_params random_params(const study_spec& spec, std::uint64_t number) {
  auto rng = trial_random(spec.seed, number);
  variant_params out;
  for (const auto& p : spec.space)
    out.push_back({p.node, p.param, draw_value(p, rng)});
  return out;
}

variant_params tpe_params(const study_spec& spec, bool maximize, const std::vector<trial>& trials,
                          std::uint64_t number) {
  auto results = ranked(trials, maximize);
  if (results.empty() || results.size() < spec.tpe.n_startup_trials)
    return random_params(spec, number);
  auto n_good = good_count(results.size());
  auto [good, good_w] = weighted({results.begin(), results.begin() + static_cast<std::ptrdiff_t>(n_good)});
  auto [bad, bad_w] = weighted({results.begin() + static_cast<std::ptrdiff_t>(n_good), results.end()});
  auto rng = trial_random(spec.seed, number);
  variant_params out;
  for (const auto& p : spec.space)
    out.push_back({p.node, p.param, tpe_value(p, spec.tpe, good, good_w, bad, bad_w, rng)});
  return out;
}

} // namespace cdui::policy
