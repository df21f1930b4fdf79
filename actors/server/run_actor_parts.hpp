#pragma once

// The run actor's parts, one job per file, internal to it: run_actor.cpp (its messages, and the
// run's way from queued to its start), run_end.cpp (its end recorded, its cards given back),
// run_log.cpp (the run's log and record: events into the store and its folder, and those waiting
// for them), run_stops.cpp (stop deadlines, and executors left to end alone) and run_parts.cpp (a
// DDP run's parts on other workers).

#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/server/run_actor.hpp"
#include "messages/run_outcome.hpp"
#include "messages/stop_reason.hpp"

namespace cdui::actors::run_parts {

using self_ptr = caf::stateful_actor<run_state>*;

// run_log.cpp

/// The run's events after `cursor`, as the store has them.
[[nodiscard]] event_batch events_after(const run_state& st, std::uint64_t cursor);
/// Answers the event waiters that have news, and once the run has ended those waiting for its end.
void wake_waiters(self_ptr self);
/// The actor quits before its run has ended: those waiting for the end get an error saying `why`,
/// those waiting for events what there is.
void let_waiters_go(self_ptr self, const std::string& why);
/// The store refused a write of this run (a full disk, say): the run cannot be recorded, so it
/// stops, and ends failed with the store's reason (finish) instead of being left between two
/// states holding its slot. Logged once.
void store_failed(self_ptr self, const std::string& what);
/// Appends events with this run's next cursors; `events` keep their time, or get now when it is 0.
/// Events the store refuses are dropped (the run stops: store_failed).
void append_events(self_ptr self, std::vector<run_event> events);
void append_all(self_ptr self, std::vector<std::pair<std::string, std::string>> items);
void append(self_ptr self, const std::string& type, std::string data);
/// Stores what the executor has emitted so far.
void flush(self_ptr self);
/// Records the files a run left in its folder's checkpoints/ as its artifacts.
void record_artifacts(const run_state& st);

/// Runs `write` (to the store); false, with the run stopping (store_failed), when it throws.
template <class F>
bool stored(self_ptr self, F write) {
  try {
    write();
    return true;
  } catch (const std::exception& e) {
    store_failed(self, e.what());
    return false;
  }
}

// run_stops.cpp

/// Leaves the run's executor to end alone: what it emits from here on is dropped; a run in a process
/// of its own has the process killed (with `reason`), and a thread is counted in
/// abandoned_executors() until it returns.
void abandon_executor(run_state& st, const std::string& reason);
/// An executor thread returns: counted off abandoned_executors() if it was abandoned.
void executor_returned(event_buffer& buffer);
/// Asks the run to stop (a cancel, a store that refuses it) or, with `interrupt`, to end interrupted
/// (the server stops): its flags are set, a running worker run's worker is told, and a local run
/// that has not ended by its stop deadline is ended then (miss_stop_deadline).
void ask_to_stop(self_ptr self, bool interrupt);
/// The run did not reach a stop check in time: it ends interrupted now (miss_stop_deadline).
void miss_stop_deadline(self_ptr self);

// run_parts.cpp (a DDP run across workers, docs/ddp.md "Across workers")

/// Rank 0's part of a run across workers: its assignment says so, with the run's secret (made
/// here and kept in the run's folder, 0600; sent over the agents' channel only). Nothing for a run
/// on one worker. The reason when the secret cannot be kept; empty otherwise.
[[nodiscard]] std::string add_rank_zero_part(self_ptr self, assign_run& a);
/// Rank 0 said where its store listens (a ddp_rendezvous among `events`): each other worker's
/// part is assigned, with that host and port (kept beside the secret).
void start_parts(self_ptr self, const std::vector<run_event>& events);
/// A server's restart found the run executing: the other workers' parts are followed again when
/// rank 0 had said where its store listens (a worker that lacks its part gets it), else sent when
/// it says so. Answers (true) once the registry follows each of them: the server lets agents in
/// only then, so that no agent's hello finds a part it has unknown (and is told to forget it).
caf::result<bool> adopt_parts(self_ptr self);
/// The run has ended: a part still running is stopped (its ranks would end with rank 0's anyway).
void stop_parts(self_ptr self);
/// The run has ended: the queue gets its cards back (ended, id) now, or once every part still
/// running on another worker has ended: no other run gets a card a rank still holds.
void release_when_parts_end(self_ptr self);
/// A part ended: the first that failed fails the run with its error, and rank 0's part is stopped.
void part_ended(self_ptr self, const std::string& worker, const run_outcome& outcome);
/// The run's outcome from rank 0's and a part's failure (policy::ddp_run_outcome).
[[nodiscard]] run_outcome with_part_failure(const run_state& st, run_outcome outcome);
/// The longest rank 0's outcome is held for the parts' reports (rank0_ended).
inline constexpr std::int64_t max_part_report_wait_ms = 10'000;

/// Rank 0's outcome arrived: the run's end, with a part's failure when one is its cause, or held
/// for the parts still running when it only lost the other ranks (at most the stop deadline, and
/// max_part_report_wait_ms).
/// `answer` is delivered once the end is recorded.
void rank0_ended(self_ptr self, const run_outcome& outcome, caf::response_promise answer);
/// The run ends with rank 0's held outcome, if it still holds one.
void finish_held(self_ptr self);

// run_end.cpp

/// Ends the run with `outcome`: recorded (or tried again each second while the store refuses it:
/// retry_recording_end), those waiting told, and its cards given back (release_when_parts_end).
/// `stopped` is the word of the execution_stopped it adds for a run in a process of its own that
/// ended cancelled or interrupted without its end event; finish takes its status's.
void finish_with(self_ptr self, run_outcome outcome, stop_reason stopped);
void finish(self_ptr self, const run_outcome& outcome);
/// (tick) after an end the store refused: tried again; the actor quits once it is recorded if
/// the queue asked it to.
void retry_recording_end(self_ptr self);

} // namespace cdui::actors::run_parts
