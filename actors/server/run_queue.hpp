#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/policy/admission.hpp"
#include "actors/common/deadlines.hpp"
#include "actors/server/store_client.hpp"
#include "devices/host_inventory.hpp"
#include "storage/run_store.hpp"

namespace cdui::actors {

/// Interactive runs at once (seed 001: "starts at once (two at most, one per tab)").
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
  caf::actor registry;
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
};

/// A worker as the queue knows it: the devices it offers (its own names) and whether its slots
/// admit runs now (it is connected and not draining).
struct known_worker {
  std::vector<std::string> devices;
  /// Each device's card UUID, in the same order (empty: unknown, never matched).
  std::vector<std::string> uuids;
  bool open = false;
  bool one_shot = false;
};

/// A run for any worker or the one-shot pool, waiting for a free slot of its device kind.
struct floating_run {
  std::string kind;  // cpu, cuda, sim, ...; empty: the first accelerator of any kind
  bool pool = false;  // the one-shot pool: one-shot workers only, never this server
  bool keeps_outputs = false;  // record_outputs: never a one-shot worker, which exits with them
};

struct run_queue_state {
  run_queue_config cfg;
  policy::admission slots;
  std::map<std::string, caf::actor> runs;         // runs that have not ended, by id
  std::set<std::string> started;                  // of those, the ones running
  std::set<std::string> remote;                   // of those, the ones a worker executes
  std::map<std::string, std::string> interactive; // interactive run id -> editor session
  /// The seed of each editor session whose interactive runs gave none: drawn at its first run and
  /// kept, like a tab's seed, so that its execution cache can serve the next run.
  std::map<std::string, std::uint64_t> session_seeds;
  std::map<std::string, known_worker> workers;     // every worker seen since the start, by name
  std::set<std::string> lowered;                  // worker slots whose limit a shared card lowers
  std::deque<std::string> floating;               // runs for any worker, in submit order
  std::map<std::string, floating_run> floats;     // and what each needs
  caf::actor registry;                            // the worker registry, when the server has one
  bool shutting_down = false;
  std::vector<caf::response_promise> drained;     // shutdown callers, answered when none runs
  static inline const char* name = "run_queue";
};

/// The supervisor of runs: validates a submit once, records the run, creates its folder and actor,
/// and admits it onto its devices' slots through the admission policy (one FIFO per device key).
/// Protocol: (submit, run_request) -> submit_result; (info, id) -> run_info;
/// (list, status or "", limit, offset) -> run_page; (cancel, id) -> bool;
/// (events, id, cursor, wait_ms) -> event_batch; (wait, id) -> run_info once ended;
/// (erase, id) -> erase_result; (drop, session) -> bool (an editor session ended: its seed goes);
/// (worker_update, name, device offers, open, one_shot): a worker's slots open or close, and cards
/// it shares with this server or another worker (same UUID) become one budget;
/// (status) -> JSON text; (shutdown) -> bool once no run is running.
/// An unknown id gets an error naming it.
caf::behavior run_queue(caf::stateful_actor<run_queue_state>* self, run_queue_config cfg);

} // namespace cdui::actors
