#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/common/deadlines.hpp"
#include "actors/server/fwd.hpp"
#include "actors/server/store_client.hpp"
#include "messages/run_event.hpp"
#include "messages/run_request.hpp"
#include "runtime/engine.hpp"
#include "storage/run_directory.hpp"
#include "storage/run_store.hpp"

namespace cdui::actors {

/// Executor threads of runs that missed their stop deadline and still execute, in this process.
/// A process that exits with any must not run static destructors under them (std::_Exit).
[[nodiscard]] int abandoned_executors();

/// A worker's part of a DDP run across workers: ranks first_rank.. on its `devices`.
struct ddp_part_place {
  std::string worker;
  std::vector<std::string> devices;
  int first_rank = 0;
};

/// Everything a run actor starts with.
struct run_setup {
  run_info info;
  std::shared_ptr<const runtime::validated_graph> graph;
  /// The run's folder (context.run_dir), made when the run starts; null until then.
  std::shared_ptr<storage::run_directory> dir;
  std::shared_ptr<storage::run_store> store;
  runtime::run_context context;  // all but emit, stop, interrupt and stores, which the actor fills in
  /// The server's stores, which the run uses when its context's flags say so.
  store_handles stores;
  /// The editor session of an interactive run (its execution cache); empty otherwise.
  std::string session;
  /// The graph as submitted: its folder's graph.json, and a worker run's assignment.
  std::string graph_json;
  /// A worker run: the worker's name and its devices (its own names), and the registry that
  /// assigns it. Empty worker: the run executes in this process.
  std::string worker;
  std::vector<std::string> worker_devices;
  worker_registry_actor registry;
  /// A DDP run across workers (docs/ddp.md, "Across workers"): every rank's card, "worker/device"
  /// (set for any worker run; it spans workers when `parts` is not empty), and the part of each
  /// worker after rank 0's, which gets its ranks once rank 0's store is up.
  std::vector<std::string> ranks;
  std::vector<ddp_part_place> parts;
  /// A local run that has not reached a stop check this long after a cancel or an interrupt ends
  /// interrupted without it, its slot freed; its thread is left to finish alone (abandoned), or
  /// its process is killed.
  std::int64_t stop_deadline_ms = default_stop_deadline_ms;
  /// A local run executes as `exec_binary exec --pipe RUNDIR`, a process of its own (cdui start
  /// --isolation process); empty: on a thread of this process.
  std::filesystem::path exec_binary;
  /// A run just submitted has no events yet; one recovered from the store starts after the last
  /// it has there (read when the actor starts).
  bool has_events = true;
};

/// Someone waiting for events after `cursor`.
struct event_waiter {
  std::uint64_t id;
  std::uint64_t cursor;
  caf::response_promise promise;
};

/// Events the executor thread has emitted and the actor has not stored yet. The executor posts a
/// (flush) only when it finds the buffer empty, so a fast loop costs one message and one commit
/// per batch of events, and the actor's mailbox cannot grow without bound.
struct event_buffer {
  std::mutex mutex;
  std::vector<std::pair<std::string, std::string>> pending;  // type, data
  /// The node executing now, as "node 'id' (Type)", for the reason of a missed stop deadline.
  std::string current_node;
  /// Set when the run was ended without its thread: what the thread emits after is dropped.
  bool closed = false;
  /// The thread was left executing (counted in abandoned_executors()).
  bool abandoned = false;
  /// Set (with the reason) to have the executor kill the run's process: a missed stop deadline.
  std::string kill_reason;
};

struct run_state {
  run_setup setup;
  run_queue_actor queue;
  std::uint64_t last_cursor = 0;
  /// Whether an execution_complete, execution_error or execution_stopped is in the log.
  bool ended_event = false;
  std::vector<event_waiter> waiters;
  std::vector<caf::response_promise> end_waiters;
  std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<std::atomic<bool>> interrupt = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<event_buffer> buffer = std::make_shared<event_buffer>();
  std::thread executor;
  std::uint64_t next_waiter = 0;
  /// A study's pruner stopped the run: it ends `pruned` with this reason instead of `cancelled`.
  std::string prune_reason;
  /// The store could not record the run (a full disk, say): it stops and ends failed with this.
  std::string store_failure;
  /// The run has ended but the store refused its end: tried again until it takes it.
  bool end_unrecorded = false;
  /// The queue asked it to quit (it does once its end is recorded).
  bool quit_asked = false;
  /// A DDP run across workers: the run's secret, where rank 0's store listens once it has said so,
  /// the parts' actors by worker from then on, the workers whose parts have ended, the first
  /// failure of a part (the run's error unless rank 0 failed first), and whether the run has ended
  /// and waits for its parts to end to give its cards back. All but the actors are kept in the
  /// run's ddp.json for a restart.
  std::string ddp_secret;
  std::string store_host;
  std::int32_t store_port = 0;
  std::map<std::string, caf::actor> part_actors;
  std::set<std::string> parts_ended;
  std::string part_failure;
  bool release_after_parts = false;
  /// Rank 0's outcome when it only lost the other ranks, held until a part says why (or all have
  /// ended, or the stop deadline passed): policy::awaits_part_failure. Its worker's report is
  /// answered (and the worker forgets the run) once the run's end is recorded.
  std::optional<run_outcome> rank0_outcome;
  std::optional<caf::response_promise> rank0_answer;
  ~run_state();
  static inline const char* name = "run";
};

/// Most events one answer carries; a reader asks again from the last cursor.
inline constexpr std::size_t max_events_per_answer = 1000;

/// One run: queued -> running -> succeeded | failed | cancelled | interrupted | pruned. Every event and
/// status change is in the run store before anyone is told. A write the store refuses (a full
/// disk) stops the run, which ends failed saying so, and its slot is freed all the same. A grant starts the engine on a thread
/// of its own (never on a CAF scheduler thread); the thread posts events and the outcome back as
/// messages. When the run has ended it tells the queue (ended, id) and quits on (quit), once the store has
/// its end (a refused end is tried again on (tick) each second while the queue lives).
/// Protocol: (grant, run id or "interactive"); (append, type, data); (flush); (finished, run_outcome);
/// (finished, run_outcome, stop_reason): a worker run the server ended, with its stop's word;
/// (cancel, dequeued) -> bool (dequeued: the queue took it out of its queue, so it never starts;
/// false when it had ended or a cancel was already sent); (cancel, dequeued, prune reason) -> bool:
/// the same stop, which a study's pruner asks for: the run ends `pruned` with the reason as its
/// error and its execution_stopped's message; (interrupt) -> bool;
/// (stop, reason): a waiting run the queue took out fails unstarted with the reason;
/// (info) -> run_info; (events, cursor, wait_ms) -> event_batch; (wait) -> run_info once ended;
/// (status) -> run_actor_status.
caf::behavior run_actor(caf::stateful_actor<run_state>* self, run_setup setup, run_queue_actor queue);

/// Appends an event to a run that has no actor (a restart's bookkeeping), with the next cursor.
void append_stored_event(storage::run_store& store, storage::run_directory* dir,
                         const std::string& run_id, const std::string& type,
                         const std::string& data);

} // namespace cdui::actors
