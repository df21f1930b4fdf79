#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/server/server.hpp"
#include "messages/actor_status.hpp"
#include "messages/memory_ledger.hpp"

namespace cdui::apps {

// The HTTP edge's JSON for the structs the actors report (messages/actor_status.hpp): written
// here alone, in the shapes docs/http-api.md gives.

/// GET /api/status: the actor tree, {"kind": "server", "home", "children": [...]}.
[[nodiscard]] nlohmann::json status_json(const server_status& status);

/// GET /api/status's summary for a person: the queues, the runs running, the runs waiting with
/// why, the workers by status, and "text", the same in a few sentences.
[[nodiscard]] nlohmann::json status_summary_json(const server_status& status);

/// GET /api/status's body: the summary first (at the top, for a person reading it), then the
/// actor tree of status_json.
[[nodiscard]] std::string status_body(const server_status& status);

/// GET /api/queues: every device's queue as the status tree has it, but only its first `most`
/// waiting runs (and the first `most` floating ones), with why each of those waits, and how many
/// wait in all: a page that costs the same with 10,000 queued runs.
[[nodiscard]] nlohmann::json queues_json(const run_queue_status& queue, std::size_t most);

/// GET /api/health: {"status": "ok", "caches": {name: {...}}} (docs/http-api.md, "GET /api/health").
[[nodiscard]] nlohmann::json health_json(const std::vector<cache_store_status>& caches);

/// GET /api/workers: every worker (with each device's "slots" from the queue: taken, limit,
/// waiting, shared; null for a device the queue has no slot for), the enrolled names and the
/// refused connections.
[[nodiscard]] nlohmann::json workers_json(const workers_status& workers, const run_queue_status& queue,
                                          const memory_ledger_status& memory);

/// GET /api/devices: this server's devices, each with its slots and share mode, and for a card
/// shared by memory what its ledger holds.
[[nodiscard]] nlohmann::json devices_json(const run_queue_status& queue, const memory_ledger_status& memory);

} // namespace cdui::apps
