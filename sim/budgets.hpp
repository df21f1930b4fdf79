#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/job.hpp"

namespace cdui::sim {

/// How cards admit runs: one run per card by count (Exclusive, as SLURM and Ray hand out whole
/// GPUs), or by memory budgets (Shared by memory, docs/http-api.md "Cards shared by memory").
enum class sharing { exclusive, by_memory };

/// Where a shared card's run gets its budget (policy::budget_source):
/// typed: what the user typed (job::typed), by default the real peak rounded up to a whole GiB
///   (`--memory-gib`);
/// measured: the peak of an earlier run of the same graph, which differs from this run's by up to
///   ±`error`, + 20% (policy::resolve_budget's measured default);
/// estimate: the real peak off by up to ±`error` (target.memory_source "estimate").
enum class budget_rule { none, typed, measured, estimate };

/// A policy compared on a trace.
struct policy_spec {
  std::string name;
  sharing mode = sharing::by_memory;
  budget_rule budget = budget_rule::typed;
  double error = 0;
};

/// How far an earlier run's peak of the same graph is from this run's, by default (±5%): seeded
/// runs of one graph give the same peak, other data or shapes of the same memory key move it.
inline constexpr double measured_peak_spread = 0.05;

/// The five of docs/benchmarks.md: exclusive, typed, measured, estimate10 (±10%), estimate30.
[[nodiscard]] std::vector<policy_spec> standard_policies();
/// One of those by name; nullopt for another name.
[[nodiscard]] std::optional<policy_spec> policy_named(const std::string& name);

/// Job `index`'s budget per card under `policy` (0 under Exclusive), through
/// policy::resolve_budget, its error drawn from `seed` and the index alone, so that every policy
/// and every run of the simulator sees the same draw for the same job.
[[nodiscard]] std::int64_t budget_of(const job& j, std::size_t index, const policy_spec& policy,
                                     std::uint64_t seed);

} // namespace cdui::sim
