#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/sweep.hpp"

namespace cdui::apps {

/// GET /api/sweeps/{id}: the sweep, its state (policy::state_of its runs, or the final one cdui.db
/// keeps), its runs counted by status, its variants ranked by the objective (policy::rank_variants:
/// a succeeded run's objective; ties share a rank; without one: last, rank null), and the best.
/// Each variant: index, rank, run_id, status, params, objective, worker_id, devices, queue_key, error.
[[nodiscard]] nlohmann::json sweep_json(const sweep_record& sweep, const std::vector<sweep_child>& runs);

/// GET /api/sweeps: one sweep's line, without its variants.
[[nodiscard]] nlohmann::json sweep_summary_json(const sweep_record& sweep, const std::vector<sweep_child>& runs);

/// GET /api/sweeps/{id}/results.csv: a header, then one row per variant in rank order: rank,
/// index, run_id, status, each param (node.param), the objective (its metric's name), worker_id,
/// queue_key.
[[nodiscard]] std::string sweep_csv(const sweep_record& sweep, const std::vector<sweep_child>& runs);

/// `cdui sweep`'s table of a GET /api/sweeps/{id} answer: RANK, RUN, STATUS, each param, the
/// objective, WORKER, QUEUE, in rank order.
[[nodiscard]] std::string sweep_table(const nlohmann::json& sweep);

} // namespace cdui::apps
