#pragma once

// The run queue's parts, one job per file, internal to the run queue:
// run_queue.cpp (messages, and each run's way through the queue), run_queue_recovery.cpp (a
// restart's unfinished runs, and run actors that die), run_queue_workers.cpp (workers' slots and
// the shared budgets), run_queue_memory.cpp (cards shared by memory and the ledger),
// run_queue_budgets.cpp (runs' memory budgets), run_queue_waits.cpp (why a queued run waits) and
// run_queue_status.cpp (its part of /api/status).

#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/make_message.hpp>
#include <caf/result.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/server/run_preparation.hpp"
#include "actors/server/run_queue.hpp"
#include "messages/actor_status.hpp"
#include "messages/sweep.hpp"
#include "messages/worker.hpp"

namespace cdui::actors {

struct pending_submit {
  prepared_run run;
  run_request request;
  caf::typed_response_promise<submit_result> promise;
};

} // namespace cdui::actors

namespace cdui::actors::queue_parts {

using self_ptr = run_queue_actor::stateful_pointer<run_queue_state>;
using run_record = policy::run_record<caf::actor>;

/// The record of run `id` (policy::run_table), when it has not ended.
[[nodiscard]] inline run_record* find_run(run_queue_state& st, const std::string& id) {
  return st.runs.find(run_id{id});
}
[[nodiscard]] inline const run_record* find_run(const run_queue_state& st, const std::string& id) {
  return st.runs.find(run_id{id});
}

/// Submits (run_queue_submits.cpp). A submit checked and given its id, its answer promised: recorded
/// at once when nothing else waits in the mailbox (or it must be: an interactive or a worker run),
/// else with the submits already there, at the (flush) the first of them sends.
[[nodiscard]] caf::result<submit_result> submit(self_ptr self, run_request& req);
/// Records the checked submits in one transaction, queues them and answers each (the (flush) the
/// first of them sent); a sweep calls it first, so runs queue in the order they came.
void record_submits(self_ptr self);
/// A submit's run, checked as every submit is (prepare_run, then its memory budget,
/// settle_budget); the refusal as the submit's answer.
[[nodiscard]] std::variant<prepared_run, submit_result> prepare_submit(run_queue_state& st, run_request& req);
/// Gives a prepared run its id, name, creation time, stored options and the path of its folder,
/// which is made when the run starts.
void give_identity(run_queue_state& st, prepared_run& p, const run_request& req, std::string id);
/// Renames a prepared run the store recorded under another id than it was given (its id was taken
/// in the store: run_store's inserts then draw another, through new_run_id).
void take_recorded_id(run_queue_state& st, prepared_run& p, const std::string& recorded);
/// A sweep (run_queue_sweeps.cpp): every variant checked as a submit is, then all of them recorded
/// in one transaction and queued, or, when one is refused, none, with its refusal. Variants with a
/// budget on cards shared by memory are judged on the memory ledger's figures first (answered then).
[[nodiscard]] caf::result<sweep_submit_result> submit_sweep(self_ptr self, sweep_submission& s);
/// A study's trial (run_queue_studies.cpp): checked as a submit is, recorded with its trial in one
/// transaction of its own (after the submits waiting for theirs) and queued.
[[nodiscard]] submit_result submit_trial(self_ptr self, trial_submission& t);

/// Spawns a run's actor and monitors it (run_actor_down).
caf::actor spawn_run(self_ptr self, run_setup setup);
/// Hands a prepared run to a new actor and queues it (or, interactive, starts it at once).
void launch(self_ptr self, prepared_run p, const run_request& req);
/// Places the floating runs that can be, and grants every run that can start now.
void pump(self_ptr self);
/// A run has ended, or its actor has: its slots are free, it leaves the lane, what can start does.
void forget(self_ptr self, const std::string& id);
/// Takes a floating run out before it is placed; false when it is not floating.
bool remove_floating(run_queue_state& st, const std::string& id);

/// After a restart (policy::recovery_plan): runs that were running end interrupted, worker runs
/// wait to be adopted, queued runs are queued again in their original order.
void resume(self_ptr self);
/// The server stops: running runs are interrupted (a worker's go on there); a queued one is
/// cancelled, or with `resume` left in the store for the next start, its actor told to quit.
void stop_runs(self_ptr self);
/// A run actor ended before its run did: the run fails with the reason (a worker is told to stop
/// it), and its slots go to the next run.
void run_actor_down(self_ptr self, const caf::down_msg& down);

/// A worker joined, changed or went: its devices' slots open or close (and the queue keeps why),
/// keyed worker/device.
void worker_update(self_ptr self, const std::string& name, const std::vector<device_offer>& offers,
                   worker_availability availability, bool one_shot);
/// An operator removed the worker: its slots close for good and the runs waiting for it fail.
void worker_gone(self_ptr self, const std::string& name, const std::string& reason);
/// Rebuilds the shared budgets of cards several offerers offer (policy::card_groups) from the
/// slots' limits now, and logs the limits they lower for worker `joined` (empty: none).
void regroup(self_ptr self, const std::string& joined);

/// A slot's card as sentences name it ("cuda:1 on gpu-box", "sim:0 on this server").
std::string card_name(const std::string& key);
/// Sharing cards by memory (run_queue_memory.cpp): spawns the memory ledger (linked) and shares
/// again the cards the store says are shared.
void start_ledger(self_ptr self);
/// A worker offers a device (its hello or heartbeat): when the card is set Shared, its key is under
/// the ledger, which gets its figures.
void share_offered(self_ptr self, const std::string& key, std::int64_t total, std::int64_t free);
/// An operator set a card Shared by memory or back to Exclusive (a worker's, or this server's when
/// `offerer` is empty); cdui.db keeps it. true, or the refusal: not_found, or conflict for a card
/// that cannot be shared.
caf::result<bool> share_card(self_ptr self, const std::string& offerer, const std::string& device, bool shared);
/// Memory budgets (run_queue_budgets.cpp). A run that may go to a card shared by memory gets its
/// budget: the one it declares (an estimate raised to a larger measured peak + 20%), else its
/// graph's measured default (the peak of the last succeeded run of its memory key on as many cards
/// + 20%), written into `req` (its options) and its context. The refusal when it has neither (a run
/// for any card that may also take one by count goes without); empty when all is well.
std::string settle_budget(const run_queue_state& st, run_request& req, prepared_run& p);
/// Remembers a queued run's budget and its graph's memory key, for the ledger and for raising.
void note_budget(run_record& run, const prepared_run& p, const run_request& req);
/// A run without a budget at a card that turned shared: it gets its graph's measured default, or
/// is marked as waiting for one (false).
bool default_budget(self_ptr self, const std::string& id);
/// A run ended: when it succeeded, its peak is its graph's measured peak, which gives the waiting
/// runs of the same graph their default budget or raises their measured or estimated one.
void record_peak(self_ptr self, const std::string& id);

/// A run handed out by admission at a shared card: the ledger judges it (grant, wait, refuse).
void ask_memory(self_ptr self, const std::string& id);
/// A floating run with a budget: the ledger judges it on the shared cards that would take it next
/// (policy::free_slots); granted, it starts there at once (start_placed).
void ask_floating(self_ptr self, const std::string& id, const policy::floating_slots& free);
/// A floating run the ledger granted a place on `key`: placed there, and started.
void start_placed(self_ptr self, const std::string& id, const std::string& key);
/// Room on a card: the runs told to wait there are asked again.
void memory_freed(self_ptr self, const std::string& key);
/// A run admitted by its budget started / ended: the ledger counts it as running / frees it.
void memory_started(self_ptr self, const std::string& id);
void memory_forget(self_ptr self, const std::string& id);

/// Why a queued run waits, as a sentence for the operator (its run object's waiting_reason): the
/// memory ledger's reason when it gave one, else what holds it in its queue
/// (policy::admission::why_waiting) or, for a run for any worker or the pool, what holds the slots
/// of its kind. Empty when nothing does (it starts now). Only when a run object is asked for.
std::string waiting_reason(const run_queue_state& st, const std::string& id);

/// The same as a word fit for a metric label (waiting_run_status::kind).
std::string waiting_kind(const run_queue_state& st, const std::string& id);

/// A queued run starts now: how long it waited goes into the queue's wait histogram.
void note_started(run_queue_state& st, const std::string& id);

/// The queue's status, with each run actor's as its children when `with_runs`.
caf::result<run_queue_status> status_tree(self_ptr self, bool with_runs);

} // namespace cdui::actors::queue_parts
