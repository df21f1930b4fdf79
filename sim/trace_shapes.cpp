#include "sim/trace_shapes.hpp"

#include <algorithm>
#include <cmath>

#include "actors/policy/sweep_spec.hpp"
#include "messages/run_request.hpp"

namespace cdui::sim {

namespace {

constexpr double two_pi = 6.283185307179586;
/// A peak never above this share of the smallest card, so that every budget of the compared
/// policies (a measured peak + 20% off by 5%, an estimate 30% high) and a CUDA context still fit
/// one card: no policy refuses a run for its budget alone.
constexpr double most_of_a_card = 0.75;

struct draws {
  explicit draws(std::uint64_t seed) : rng(seed) {}
  double uniform() { return rng.uniform(); }
  double between(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// exp(N(log(median), sigma)), by Box-Muller from two uniforms.
  double log_normal(double median, double sigma) {
    double u = 1 - uniform();  // (0, 1]
    double z = std::sqrt(-2 * std::log(u)) * std::cos(two_pi * uniform());
    return median * std::exp(sigma * z);
  }
  double exponential(double mean) { return -mean * std::log(1 - uniform()); }
  policy::sweep_random rng;
};

std::int64_t smallest_card(const cluster_spec& cluster) {
  std::int64_t least = cluster.largest_card();
  for (const auto& g : cluster.groups)
    least = std::min(least, g.card_bytes);
  return least;
}

std::int64_t seconds(double s, double lo, double hi) { return std::llround(std::clamp(s, lo, hi)); }

/// A single-card run of the small shape.
job small_job(draws& d, double card_gib) {
  job j;
  auto gib = std::clamp(d.log_normal(6, 0.8), 0.5, card_gib * most_of_a_card);
  j.peak = static_cast<std::int64_t>(gib * bytes_per_gib);
  j.duration = seconds(d.log_normal(1200, 1.0), 60, 12 * 3600);
  return j;
}

/// DDP on 2, 4 or 8 cards (at most a worker's), most of each card, for hours.
job ddp_job(draws& d, double card_gib, int most_cards, double least_share) {
  job j;
  auto pick = d.uniform();
  j.cards = std::min(most_cards, pick < 0.4 ? 2 : pick < 0.7 ? 4 : 8);
  j.peak = static_cast<std::int64_t>(d.between(least_share, most_of_a_card) * card_gib * bytes_per_gib);
  j.duration = seconds(d.log_normal(4 * 3600, 0.8), 600, 3 * 86400);
  return j;
}

/// Submit times: each group of consecutive jobs (a single job, or a sweep's variants) at one second,
/// the groups Poisson, such that the trace asks for `load` of the cluster's cards on average.
void space_out(trace& jobs, const std::vector<std::size_t>& groups, double load,
               const cluster_spec& cluster, draws& d) {
  double card_seconds = 0;
  for (const auto& j : jobs)
    card_seconds += static_cast<double>(j.cards) * static_cast<double>(j.duration);
  double span = card_seconds / (load * static_cast<double>(cluster.cards()));
  double mean_gap = span / static_cast<double>(std::max<std::size_t>(1, jobs.size()));
  double t = 0;
  std::size_t i = 0;
  for (auto size : groups) {
    for (std::size_t k = 0; k < size; ++k)
      jobs[i++].arrival = std::llround(t);
    t += d.exponential(mean_gap * static_cast<double>(size));
  }
}

} // namespace

std::optional<trace_shape> trace_shape_named(const std::string& name) {
  for (auto s : {trace_shape::small, trace_shape::mix, trace_shape::bursts, trace_shape::whole})
    if (to_string(s) == name)
      return s;
  return std::nullopt;
}

std::string to_string(trace_shape shape) {
  switch (shape) {
  case trace_shape::small: return "small";
  case trace_shape::mix: return "mix";
  case trace_shape::bursts: return "bursts";
  case trace_shape::whole: return "whole";
  }
  return "small";
}

trace generate(const trace_request& request, const cluster_spec& cluster) {
  draws d{request.seed};
  const double card_gib = static_cast<double>(smallest_card(cluster)) / bytes_per_gib;
  trace jobs;
  jobs.reserve(request.jobs);
  std::vector<std::size_t> groups;
  while (jobs.size() < request.jobs) {
    auto before = jobs.size();
    switch (request.shape) {
    case trace_shape::small:
      jobs.push_back(small_job(d, card_gib));
      break;
    case trace_shape::mix:
      jobs.push_back(d.uniform() < 0.15 ? ddp_job(d, card_gib, cluster.most_cards(), 0.4) : small_job(d, card_gib));
      break;
    case trace_shape::bursts: {
      // A sweep: one graph, so one peak within a few percent, and durations alike.
      auto base = small_job(d, card_gib);
      auto size = static_cast<std::size_t>(d.between(1, 200));
      for (std::size_t k = 0; k < size && jobs.size() < request.jobs; ++k) {
        auto j = base;
        j.peak = static_cast<std::int64_t>(static_cast<double>(base.peak) * d.between(0.97, 1.03));
        j.duration = std::max<std::int64_t>(60, std::llround(static_cast<double>(base.duration) * d.between(0.7, 1.3)));
        jobs.push_back(j);
      }
      break;
    }
    case trace_shape::whole: {
      // More than half a card each (60-75%): no two fit on one card, whatever the budget's margin.
      auto j = d.uniform() < 0.2 ? ddp_job(d, card_gib, cluster.most_cards(), 0.6) : small_job(d, card_gib);
      if (j.cards == 1)
        j.peak = static_cast<std::int64_t>(d.between(0.6, most_of_a_card) * card_gib * bytes_per_gib);
      jobs.push_back(j);
      break;
    }
    }
    groups.push_back(jobs.size() - before);
  }
  space_out(jobs, groups, request.load, cluster, d);
  return jobs;
}

} // namespace cdui::sim
