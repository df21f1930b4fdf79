#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "actors/policy/sweep_spec.hpp"
#include "messages/run_status.hpp"

namespace cdui::policy {

/// A sweep as a whole: queued (no child has started), running, cancelling (a cancel is stopping
/// its children), or, once every child has ended, finished (at least one succeeded), failed (none
/// did) or cancelled.
enum class sweep_state { queued, running, cancelling, finished, failed, cancelled };

[[nodiscard]] const char* to_string(sweep_state s);
[[nodiscard]] std::optional<sweep_state> parse_sweep_state(const std::string& text);
[[nodiscard]] inline bool is_final(sweep_state s) {
  return s == sweep_state::finished || s == sweep_state::failed || s == sweep_state::cancelled;
}

/// The state of a sweep whose children have these statuses, `cancelled` once it was asked to stop.
[[nodiscard]] sweep_state state_of(const std::vector<run_status>& children, bool cancel_asked);

/// How many children have each status (every status listed, 0 included), by its name.
[[nodiscard]] std::map<std::string, std::size_t> count_by_status(const std::vector<run_status>& children);

/// The objective's value in a run's final metrics ({node id: {name: value}}, JSON text): `metric`
/// as "node.name" when that node reports it, else a name that the first node (by id) reporting it
/// gives. nullopt when no node reports it, or not as a number.
[[nodiscard]] std::optional<double> objective_value(const std::string& final_metrics,
                                                    const std::string& metric);

/// One variant as the ranking sees it: its place in the sweep and its objective (a succeeded
/// child's; nullopt for any other, or when the metric is missing).
struct variant_score {
  std::size_t index = 0;
  std::optional<double> objective;
};

struct ranked_variant {
  std::size_t index = 0;
  /// 1 for the best; ties share a rank (1, 1, 3); 0 for a variant without an objective.
  std::size_t rank = 0;
};

/// The variants best first: by objective (smaller first, or larger with `maximize`), ties in
/// variant order under one rank, then those without an objective, in variant order, unranked.
[[nodiscard]] std::vector<ranked_variant> rank_variants(const std::vector<variant_score>& scores,
                                                        bool maximize);

} // namespace cdui::policy
