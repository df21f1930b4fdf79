#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/policy/admission.hpp"
#include "actors/policy/card_groups.hpp"
#include "actors/policy/memory_budget.hpp"
#include "actors/policy/placement.hpp"
#include "actors/policy/run_table.hpp"
#include "actors/common/deadlines.hpp"
#include "actors/server/fwd.hpp"
#include "actors/server/memory_ledger.hpp"
#include "actors/server/store_client.hpp"
#include "devices/host_inventory.hpp"
#include "storage/run_store.hpp"

namespace cdui::actors {

/// Interactive runs at once (docs/http-api.md, "The interactive lane": two at most, one per tab).
inline constexpr int default_interactive_limit = 2;
inline constexpr const char* interactive_limit_env = "CODEFYUI_RUN_INTERACTIVE_MAX_CONCURRENT";

struct run_queue_config {
  std::filesystem::path home;
  devices::host_inventory host;
  std::shared_ptr<storage::run_store> store;
  /// The server's three in-memory stores, handed to every run.
  store_handles stores;
  /// Slot limits that replace the host's defaults, by device key.
  std::map<std::string, int> limits;
  /// The worker registry, when the server has a bridge: worker runs go through it, and worker runs
  /// left running by the last server wait for their worker to bring them back (adoption).
  worker_registry_actor registry;
  int interactive_limit = default_interactive_limit;
  /// A server's queue: runs left queued in the store are queued again at start (in their order),
  /// runs left running end interrupted, and a shutdown leaves queued runs for the next start.
  /// Off (the embedded runtime): the store's old runs are left alone and a shutdown cancels.
  bool resume = false;
  /// How long a local run has, after a cancel or the server's stop, to reach a stop check before
  /// it is ended interrupted without it (CODEFYUI_STOP_DEADLINE_S).
  std::int64_t stop_deadline_ms = default_stop_deadline_ms;
  /// Queued local runs execute as `exec_binary exec --pipe RUNDIR` processes (cdui start
  /// --isolation process); empty: on threads of this process. Interactive runs, and runs that
  /// use the in-memory stores (record_outputs, weights_persistent), stay on threads.
  std::filesystem::path exec_binary;
  /// Told of each run actor the queue spawns, with its run id (none by default): for an embedder
  /// or a test that watches the actors themselves.
  std::function<void(const std::string& run_id, const caf::actor& run)> on_run_spawned;
  /// Measures this server's own cards shared by memory (total, free), for the memory ledger; none:
  /// their figures stay unreported and runs there wait.
  card_probe probe;
  std::chrono::milliseconds probe_interval{500};
  /// What each run on a shared card holds besides its budget: on CUDA its context
  /// (CODEFYUI_EXECUTION_CUDA_CONTEXT_MIB, 768 MiB), elsewhere CODEFYUI_SIM_CONTEXT_MIB (0).
  std::int64_t cuda_context_bytes = 768LL << 20;
  std::int64_t sim_context_bytes = 0;
};

/// A submit checked and given its id, waiting for the commit it shares with the submits that came
/// with it (run_queue_parts.hpp).
struct pending_submit;

struct run_queue_state {
  run_queue_config cfg;
  policy::admission slots;
  /// This server's devices, and every worker seen since the start, by name: where runs may go.
  policy::local_devices local;
  policy::known_workers workers;
  /// The shared budgets: cards several offerers share, one-shot workers.
  policy::card_groups groups;
  /// Submits checked since the last commit, in their order, and their ids: recorded together in
  /// one transaction at the (flush) each batch sends itself, then answered (issue 16).
  std::vector<std::shared_ptr<pending_submit>> unrecorded;
  std::set<std::string> unrecorded_ids;
  /// Every run that has not ended, one record each: its actor, lane, placement, budget, gate,
  /// why it waits and when it was queued and started (policy::run_table).
  policy::run_table<caf::actor> runs;
  /// The seed of each editor session whose interactive runs gave none: drawn at its first run and
  /// kept, like a tab's seed, so that its execution cache can serve the next run.
  std::map<std::string, std::uint64_t> session_seeds;
  worker_registry_actor registry;                 // the worker registry, when the server has one
  /// The memory ledger (its child, linked), and the limit by count each shared key had before it
  /// turned shared.
  memory_ledger_actor ledger;
  std::map<std::string, int> exclusive_limits;
  /// The keys set Shared (cdui.db): this server's, and each worker's whether it is here or not.
  std::set<std::string> shared_keys;
  /// A worker card's memory (total, free) from the worker's latest hello or heartbeat, by key: a
  /// card shared since is judged with it at once instead of at the next heartbeat.
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> offered_memory;
  bool shutting_down = false;
  std::vector<caf::response_promise> drained;     // shutdown callers, answered when none runs
  /// The runs across workers adopted as it started whose parts the registry does not follow yet,
  /// and those waiting for that (adopt), answered true when none is left.
  std::size_t parts_adopting = 0;
  std::vector<caf::typed_response_promise<bool>> parts_adopted;
  /// How long the started runs waited.
  queue_wait_histogram queue_waits;
  static inline const char* name = "run_queue";
};

/// The supervisor of runs: validates a submit once, records the run, creates its folder and actor,
/// and admits it onto its devices' slots through the admission policy (one FIFO per device key).
/// Protocol: (submit, run_request) -> submit_result, once recorded: the submits that arrive
/// together share one commit, at the (flush) the first of them sends the queue; (info, id) -> run_info;
/// (list, status or "", limit, offset) -> run_page; (cancel, id) -> bool;
/// (events, id, cursor, wait_ms) -> event_batch; (wait, id) -> run_info once ended;
/// (erase, id) -> erase_result; (drop, session) -> bool (an editor session ended: its seed goes);
/// (worker_update, name, device offers, availability, one_shot): a worker's slots open or close
/// (why they close is kept for the waiting runs), and cards it shares with this server or another
/// worker (same UUID) become one budget;
/// (status) -> run_queue_status, with its run actors'; (status, false) -> the same without them
/// (no question to each run's actor: what GET /api/workers and /api/devices need);
/// (shutdown) -> bool once no run is running; (adopt) -> true once the registry follows the parts
/// on other workers of the runs it adopted as it started (the server lets agents in then).
/// An unknown id gets an error naming it.
/// It monitors every run actor it spawns: one that ends before its run has (an exception escaped,
/// a bug, a kill) fails its run with the reason, frees its slots, and the next run starts.
run_queue_actor::behavior_type run_queue(run_queue_actor::stateful_pointer<run_queue_state> self,
                                         run_queue_config cfg);

} // namespace cdui::actors
