#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/policy/study_spec.hpp"
#include "actors/policy/sweep_request.hpp"
#include "messages/actor_status.hpp"
#include "messages/api_error.hpp"
#include "messages/memory_ledger.hpp"
#include "messages/run_event.hpp"
#include "messages/run_outcome.hpp"
#include "messages/run_request.hpp"
#include "messages/study.hpp"
#include "messages/sweep.hpp"
#include "messages/worker.hpp"
#include "storage/run_store.hpp"

namespace cdui {

/// The server's actors as they are now (cdui::server::status()).
struct server_status {
  std::filesystem::path home;
  run_queue_status queue;                  // with its run actors
  std::vector<cache_store_status> stores;  // execution cache, run output store, node state store
  /// The worker registry's part; nullopt when the server takes no workers.
  std::optional<workers_status> workers;
  /// The ZeroMQ bridge's counters; nullopt when the server takes no workers.
  std::optional<bridge_status> bridge;
};

/// The embeddable cdui runtime: an actor system with the run queue and the runs, over the durable
/// run store $CODEFYUI_HOME/cdui.db. The CLI's embedded mode, the HTTP server and the tests use it;
/// a lab service can link it the same way. Every member function is thread-safe and blocks only
/// its caller. Where a caller must tell "none" from "could not be asked", the answer is an
/// answer<T> (messages/api_error.hpp): the value, or an api_error whose kind says which (not_found,
/// refused, conflict, busy: a part did not answer in time and is named, store_failure, internal).
class server {
public:
  struct config {
    /// Where cdui.db and runs/<id>/ folders go; default: $CODEFYUI_HOME, else ~/.cdui.
    std::filesystem::path home;
    /// CAF scheduler threads; 0: one per core of the host.
    int scheduler_threads = 0;
    /// Simulated accelerators, e.g. "2x8GiB"; empty: $CODEFYUI_SIM_DEVICES. A bad spec throws
    /// std::invalid_argument from the constructor, naming the entry.
    std::string sim_devices;
    /// A server that owns its home (cdui start): runs left queued by the last server are queued
    /// again at start, runs it left running end interrupted, and shutdown() leaves queued runs
    /// queued. Off (embedded runs): old runs are left alone and shutdown() cancels queued runs.
    bool resume = false;
    /// Where agents connect (tcp://127.0.0.1:0 picks a free port); empty: no workers, no bridge.
    std::string zmq_endpoint;
    /// The credential a same-host agent gives: the session token.
    std::string token;
    /// Encrypts the agents' wire with CURVE, under the key pair kept in $home/server.curve (made
    /// on first use). `cdui start` sets it when the endpoint is not loopback.
    bool zmq_curve = false;
    /// Executes queued local runs as `BINARY exec --pipe RUNDIR`, a process each, with the same
    /// events, slots and deadlines (`cdui start --isolation process` sets it to its own
    /// executable): a run that crashes ends alone, and a stuck one is killed at its stop
    /// deadline. Empty (the default): on a thread of this process each.
    std::filesystem::path run_process_binary;
    /// Told once, with a sentence naming it and the reason, if one of the server's own actors (the
    /// run queue, the worker registry, a cache store) ends unexpectedly: nothing replaces them,
    /// and the server cannot go on (`cdui start` stops then, with exit code 1; its next start
    /// recovers the runs from the store). The sentence is logged either way. Called on an actor
    /// thread: it must not call back into the server.
    std::function<void(const std::string& reason)> on_failure;
    /// A scheduler thread with nothing to do waits for work at once, instead of polling every
    /// 50 µs for 25 ms first (CAF's default, which answers messages sooner). For `cdui run` on
    /// the embedded runtime: its run sends an event per batch, and the polling between them took
    /// ~0.7 s of CPU from a 3.2 s one-epoch MLP run on 2 cores (docs/benchmarks.md).
    bool idle_workers_wait = false;
    /// The most variants a sweep may have; 0: CODEFYUI_MAX_SWEEP_RUNS, else 1,000.
    std::uint64_t max_sweep_runs = 0;
  };

  server();
  explicit server(config cfg);
  /// shutdown(), then stops the actor system.
  ~server();

  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Validates and queues a run; the result holds its id or why it was refused.
  [[nodiscard]] submit_result submit(run_request request);

  /// A sweep (POST /api/sweeps): its variants (policy::expand, with a seed drawn and kept when
  /// the spec has none; more than the limit is refused), each checked as a submit is; all queued
  /// in one transaction, or none with the first refusal; then its actor follows them.
  [[nodiscard]] sweep_submit_result submit_sweep(policy::sweep_request request);
  /// A sweep as cdui.db has it; not_found for an unknown id.
  [[nodiscard]] answer<sweep_record> sweep(const std::string& sweep_id);
  /// A sweep's variants with their runs as stored now, in variant order.
  [[nodiscard]] std::vector<sweep_child> sweep_runs(const std::string& sweep_id);
  /// Every sweep, newest first.
  [[nodiscard]] std::vector<sweep_record> sweeps();
  /// Stops a sweep: its queued runs are cancelled, its running ones stopped. not_found for an
  /// unknown id; false when it had ended.
  answer<bool> cancel_sweep(const std::string& sweep_id);

  /// A study (POST /api/studies): its seed drawn and kept when none is given, more trials than
  /// the sweep limit refused; trial 0 is proposed, checked as a submit is and recorded with the
  /// study, or the study is refused whole; then the study's actor runs the rest. The answer's
  /// run_id is the study's id.
  [[nodiscard]] submit_result submit_study(policy::study_request request);
  /// A study as cdui.db has it; not_found for an unknown id.
  [[nodiscard]] answer<study_record> study(const std::string& study_id);
  /// A study's trials by number, each with its run as stored now.
  [[nodiscard]] std::vector<study_trial> study_trials(const std::string& study_id);
  /// Every study, newest first.
  [[nodiscard]] std::vector<study_record> studies();
  /// Stops a study: no more trials; its queued ones are cancelled, its running ones stopped.
  /// not_found for an unknown id; false when it had ended.
  answer<bool> cancel_study(const std::string& study_id);

  /// The run's current state; not_found for an unknown id.
  [[nodiscard]] answer<run_info> info(const std::string& run_id);

  /// Every run, in submit order. Throws api_failure when the run queue cannot answer.
  [[nodiscard]] std::vector<run_info> runs();

  /// Runs newest first, of one status (empty: all); `limit` 0: all. refused for an unknown status.
  [[nodiscard]] answer<storage::run_page> runs(const std::string& status, std::size_t limit,
                                               std::size_t offset);
  /// The same, also of one worker (`local`: this server) and one device (storage::run_filter);
  /// empty: all.
  [[nodiscard]] answer<storage::run_page> runs(const std::string& status, const std::string& worker,
                                               const std::string& device, std::size_t limit,
                                               std::size_t offset);

  /// Events after `cursor`; waits up to `wait` for the first one unless the run has ended.
  /// not_found for an unknown id.
  [[nodiscard]] answer<event_batch> events(const std::string& run_id, std::uint64_t cursor,
                                           std::chrono::milliseconds wait = std::chrono::milliseconds{0});

  /// The run's metric points, in order; `name` empty: all. not_found for an unknown id.
  [[nodiscard]] answer<std::vector<storage::metric_point>> metrics(const std::string& run_id,
                                                                   const std::string& name = "");

  /// The run's newest recorded event of `type` (its latest `progress`); nullopt when it has none.
  [[nodiscard]] std::optional<run_event> last_event(const std::string& run_id, const std::string& type);

  /// Blocks until the run has ended and returns its final state. Throws api_failure for
  /// an unknown id.
  run_info wait(const std::string& run_id);

  /// Asks a run to stop: a queued one leaves its queue, a running one stops between batches.
  /// False when the run had already ended (or was already cancelled).
  bool cancel(const std::string& run_id);

  /// Deletes an ended run: its record, events, metrics and folder. erased, active (queued or
  /// running: cancel it first) or unknown.
  [[nodiscard]] answer<erase_result> erase(const std::string& run_id);

  /// The bound ZeroMQ endpoint agents connect to; empty without a bridge.
  [[nodiscard]] std::string zmq_endpoint() const;

  /// Every worker, the enrolled names and the refused connections (none without a ZeroMQ
  /// endpoint). Each device's slots are in queue() (apps/status_json.hpp joins them for
  /// GET /api/workers).
  [[nodiscard]] workers_status workers();

  /// Drains a worker (no new runs; its running runs finish) or undrains it. False when no worker
  /// of that name has connected since the server started.
  bool drain_worker(const std::string& name, bool draining);

  /// Sets one of this server's devices Shared by memory (runs there declare a budget and the
  /// memory ledger admits them by it) or back to Exclusive; cdui.db keeps it. not_found for a
  /// device it does not have, conflict for one that cannot be shared.
  [[nodiscard]] answer<bool> share_device(const std::string& device, bool shared);

  /// The same for a worker's card (CUDA, MPS or sim): the worker must have connected since the
  /// server started and offer the device (not_found otherwise).
  [[nodiscard]] answer<bool> share_worker_device(const std::string& worker, const std::string& device,
                                                 bool shared);

  /// The memory ledger: every card shared by memory with its budgets (GET /api/devices).
  [[nodiscard]] memory_ledger_status memory();

  /// The server's CURVE public key (Z85) that agents need; empty when the wire is not encrypted.
  [[nodiscard]] std::string zmq_public_key() const;

  /// Enrolls a remote worker: a new credential, returned once; cdui.db keeps only its hash.
  [[nodiscard]] enrollment enroll_worker(const std::string& name);
  /// Gives an enrolled worker a new credential; the old one no longer joins.
  [[nodiscard]] enrollment rekey_worker(const std::string& name);
  /// Revokes a worker's enrollment, disconnects it, fails the runs it executes and those queued
  /// for it with the reason "worker 'N' was removed by an operator".
  [[nodiscard]] enrollment remove_worker(const std::string& name);

  /// The actor tree: each actor's state and mailbox size (the HTTP API writes it as /api/status);
  /// without the run actors' when `with_runs` is false (/metrics: a run's own state is not asked
  /// of each of 10,000 queued runs at every scrape).
  [[nodiscard]] server_status status(bool with_runs = true);

  /// The run queue's part of status(): its slots, lane and floating runs, with its run actors
  /// (each asked for its state) unless `with_runs` is false.
  [[nodiscard]] run_queue_status queue(bool with_runs = true);

  /// What the three in-memory stores hold against their budgets (/api/health).
  [[nodiscard]] std::vector<cache_store_status> caches();

  /// The outputs a record_outputs run left in the run output store, described node by node and
  /// port by port (JSON text {node: {port: {...}}}); nullopt when the store does not hold them.
  [[nodiscard]] std::optional<std::string> recorded_outputs(const std::string& run_id);

  /// The recorded outputs of a run that `worker` executed: they stay on the worker, which is asked
  /// for them (it must be connected and answer within 10 s).
  [[nodiscard]] outputs_reply worker_outputs(const std::string& run_id, const std::string& worker);

  /// An editor session ended: its execution cache and its seed are dropped. False when it had
  /// neither.
  bool close_session(const std::string& session);

  /// Stops taking runs (submit is refused as unavailable), stops running runs between batches
  /// (they end interrupted) and waits for them. Queued runs stay queued for the next start when
  /// config.resume, else they are cancelled. Idempotent.
  void shutdown();

  [[nodiscard]] const std::filesystem::path& home() const;

  /// When this server started (ms since the epoch), for its uptime (GET /api/version, /metrics).
  [[nodiscard]] std::int64_t started_ms() const;

  /// How many failed runs the store holds, by why they failed (failure_kind of their error).
  [[nodiscard]] std::map<std::string, std::size_t> failed_by_reason();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace cdui
