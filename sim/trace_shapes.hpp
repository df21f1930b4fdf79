#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/cluster.hpp"
#include "sim/job.hpp"

namespace cdui::sim {

/// What a generated trace looks like (docs/benchmarks.md, "The traces"):
/// small: single-card runs, real peaks log-normal around 6 GiB (0.5 GiB to 75% of a card), durations
///   log-normal around 20 minutes (1 minute to 12 hours);
/// mix: 85% of those, 15% DDP device sets of 2, 4 or 8 cards holding 40-75% of each card for
///   hours;
/// bursts: the small runs in sweeps of 1 to 200 variants submitted at once (one graph: peaks within
///   3% of each other, durations within 30%);
/// whole: every run needs a whole card's memory (two never fit on one), singles and sets: on
///   such a trace sharing by memory changes nothing.
enum class trace_shape { small, mix, bursts, whole };

[[nodiscard]] std::optional<trace_shape> trace_shape_named(const std::string& name);
[[nodiscard]] std::string to_string(trace_shape shape);

struct trace_request {
  trace_shape shape = trace_shape::small;
  std::size_t jobs = 10000;
  /// The cards' time the runs ask for (cards x duration) per second of the trace over the
  /// cluster's cards: 1.0 keeps every card busy one run at a time, on average.
  double load = 1.0;
  std::uint64_t seed = 1;
};

/// A trace drawn from `request.seed` for `cluster` (its card sizes bound the peaks): the same
/// trace for the same request, on every machine.
[[nodiscard]] trace generate(const trace_request& request, const cluster_spec& cluster);

} // namespace cdui::sim
