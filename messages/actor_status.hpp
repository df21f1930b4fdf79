#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "messages/fields.hpp"
#include "messages/run_status.hpp"
#include "messages/worker.hpp"

namespace cdui {

// What the server's actors say of themselves, as plain structs: the facade hands them out
// (cdui::server::status(), health()), /metrics reads them, and the HTTP edge alone turns them into
// /api/status's and /api/health's JSON (apps/status_json.*).

/// A shared budget a slot is under: a card several offerers share, a one-shot worker's one run.
struct shared_budget_status {
  std::string group;  // "card:<UUID>" or "one-shot:<worker>"
  int limit = 1;
  std::uint64_t running = 0;          // runs holding any of the group's slots
  std::vector<std::string> with;      // the group's other slots
  CDUI_FIELDS(group, limit, running, with)
};

/// One device slot and its FIFO.
struct slot_status {
  std::string device;  // the slot key: "cuda:0", "gpu-box/cuda:1"
  int limit = 1;
  bool open = true;
  std::vector<std::string> running;
  std::vector<std::string> waiting;
  std::vector<shared_budget_status> shared;
  /// Shared by memory: the memory ledger admits its runs by budget (the limit is a ceiling only).
  bool by_memory = false;
  CDUI_FIELDS(device, limit, open, running, waiting, shared, by_memory)
};

/// An interactive run and the editor session it belongs to.
struct interactive_run_status {
  std::string run_id;
  std::string session;
  CDUI_FIELDS(run_id, session)
};

/// A run actor.
struct run_actor_status {
  std::string id;
  std::uint64_t mailbox = 0;
  run_status status = run_status::queued;
  std::string device;            // its queue key
  std::uint64_t events = 0;      // the last event's cursor
  std::uint64_t long_polls = 0;  // readers waiting for its next event
  CDUI_FIELDS(id, mailbox, status, device, events, long_polls)
};

/// A queued run and why it waits: `kind` a word for a metric label (queue, reservation,
/// card_busy, shared_card_busy, memory, worker_away, worker_draining, worker_closed, no_free_slot,
/// no_worker, starting), `reason` the sentence of its run object's waiting_reason.
struct waiting_run_status {
  std::string id;
  std::string queue_key;
  std::string kind;
  std::string reason;
  CDUI_FIELDS(id, queue_key, kind, reason)
};

/// How long runs waited in their queue before they started, since the server started, as a
/// Prometheus histogram: `buckets[i]` counts the waits of at most `bounds[i]` seconds.
struct queue_wait_histogram {
  static constexpr std::array<double, 10> bounds{0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800, 3600};
  std::array<std::uint64_t, 10> buckets{};
  std::uint64_t count = 0;
  double sum_s = 0;
  void observe(double seconds) {
    for (std::size_t i = 0; i < bounds.size(); ++i)
      if (seconds <= bounds[i])
        ++buckets[i];
    ++count;
    sum_s += seconds;
  }
  CDUI_FIELDS(buckets, count, sum_s)
};

/// The run queue, with its run actors.
struct run_queue_status {
  std::uint64_t mailbox = 0;
  std::vector<slot_status> queues;
  int interactive_limit = 0;
  std::vector<interactive_run_status> interactive;
  std::vector<std::string> floating;  // runs for any worker or the pool, not placed yet
  std::uint64_t runs = 0;             // runs that have not ended
  bool shutting_down = false;
  std::vector<run_actor_status> children;
  /// Every queued run (in a device's queue or floating), with why it waits.
  std::vector<waiting_run_status> waiting_runs;
  queue_wait_histogram queue_waits;
  CDUI_FIELDS(mailbox, queues, interactive_limit, interactive, floating, runs, shutting_down,
              children, waiting_runs, queue_waits)
};

/// One of the three in-memory stores against its budget.
struct cache_store_status {
  std::string name;  // execution_cache, run_output_store, node_state_store
  std::uint64_t mailbox = 0;
  /// One LRU per instance (the execution cache: one per editor session), each with the whole
  /// budget; else one for everything.
  bool per_instance = false;
  std::uint64_t instances = 0;
  std::uint64_t entries = 0;
  std::int64_t bytes = 0;
  std::int64_t max_bytes = 0;
  std::int64_t max_entries = 0;
  /// The word its entries are counted under in /api/health when it is not per instance (runs,
  /// modules).
  std::string count_name;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
  std::uint64_t too_large = 0;  // values refused because they alone exceed the byte budget
  CDUI_FIELDS(name, mailbox, per_instance, instances, entries, bytes, max_bytes, max_entries,
              count_name, hits, misses, evictions, too_large)
};

/// A worker run as the server's actor for its worker follows it.
struct proxied_run_status {
  std::string id;
  std::uint64_t cursor = 0;  // the last event recorded
  bool adopting = false;     // left running by the last server, waiting for its worker to report
  CDUI_FIELDS(id, cursor, adopting)
};

/// One worker as the Workers panel shows it (GET /api/workers).
struct worker_entry {
  std::string name;
  std::string status;  // online, degraded, draining, disconnected, disabled
  std::string reason;  // why it is degraded or disconnected; empty when online
  std::string version;
  std::string env_digest;
  std::string node_types_digest;
  std::vector<device_offer> devices;
  std::vector<std::string> running_runs;  // as its last heartbeat listed them
  bool one_shot = false;
  bool enrolled = false;  // joined with its enrolled credential; else the session token
  bool draining = false;
  std::int64_t connected_ms = 0;
  double heartbeat_age_s = 0;
  std::uint64_t followed_runs = 0;  // runs the server's proxy for it follows
  CDUI_FIELDS(name, status, reason, version, env_digest, node_types_digest, devices, running_runs,
              one_shot, enrolled, draining, connected_ms, heartbeat_age_s, followed_runs)
};

/// The server's actor for one worker (its proxy): its connection, its status, the runs it follows.
struct worker_proxy_status {
  std::string worker;
  std::uint64_t mailbox = 0;
  bool connected = false;
  std::int64_t disconnected_ms = 0;  // since when it has no connection; 0 while connected
  std::vector<proxied_run_status> runs;
  std::uint64_t outputs_waiting = 0;  // outputs requests waiting for the agent's answer
  /// Whether its worker has said hello since the start (else it only has runs to adopt); then
  /// `entry` is the worker as the Workers panel shows it, from this actor's own status.
  bool joined = false;
  worker_entry entry;
  CDUI_FIELDS(worker, mailbox, connected, disconnected_ms, runs, outputs_waiting, joined, entry)
};

/// An enrolled worker name and whether its worker is connected.
struct enrolled_worker {
  std::string name;
  bool connected = false;
  CDUI_FIELDS(name, connected)
};

/// An agent the server would not take, kept for the operator.
struct refused_connection_entry {
  std::string name;
  std::string version;
  std::string reason;
  std::int64_t time_ms = 0;
  CDUI_FIELDS(name, version, reason, time_ms)
};

/// The worker registry: every worker seen since the start, the enrolled names, the refused
/// connections (GET /api/workers, and the registry's part of /api/status).
struct workers_status {
  std::uint64_t mailbox = 0;
  std::int64_t heartbeat_ms = 0;
  std::vector<worker_entry> workers;
  std::vector<enrolled_worker> enrolled;
  std::vector<refused_connection_entry> refused_connections;
  std::string server_version;
  std::string node_types_digest;
  /// The registry's worker proxies that answered, by worker name.
  std::vector<worker_proxy_status> proxies;
  CDUI_FIELDS(mailbox, heartbeat_ms, workers, enrolled, refused_connections, server_version,
              node_types_digest, proxies)
};

/// What the server's ZeroMQ bridge has seen. "frames" counts whole messages, not ZeroMQ frames.
struct bridge_status {
  std::string endpoint;
  bool encrypted = false;
  std::uint64_t frames_in = 0;
  /// Messages handed to the socket; ROUTER drops, unseen, those for a peer that has gone.
  std::uint64_t frames_out = 0;
  /// Peers that have sent at least one valid message (garbage senders are not remembered).
  std::uint64_t peers = 0;
  /// Messages refused, by wire::refusal (too_large, malformed, wrong_version, unknown_type).
  std::array<std::uint64_t, 4> refused{};
  CDUI_FIELDS(endpoint, encrypted, frames_in, frames_out, peers, refused)
};

} // namespace cdui
