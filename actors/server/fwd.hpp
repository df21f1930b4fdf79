#pragma once

// The server's actors as typed handles: each names every message its actor handles and what it
// answers, so that sending one a message it does not handle is a compile error, not a message
// dropped at run time. Run actors stay dynamically typed (the queue and the registry talk to them
// through these handles' messages only).

#include <cstdint>
#include <string>
#include <vector>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/server/stored_item.hpp"
#include "messages/actor_status.hpp"
#include "messages/atoms.hpp"
#include "messages/memory_ledger.hpp"
#include "messages/run_event.hpp"
#include "messages/run_outcome.hpp"
#include "messages/run_request.hpp"
#include "messages/study.hpp"
#include "messages/sweep.hpp"
#include "messages/worker.hpp"
#include "storage/run_store.hpp"

namespace cdui::actors {

/// One of the server's three in-memory stores (cache_store.hpp).
using cache_store_actor = caf::typed_actor<
  caf::replies_to<atoms::put, std::string, std::string, stored_item, std::int64_t>::with<bool>,
  caf::replies_to<atoms::get, std::string, std::string>::with<stored_item>,
  caf::replies_to<atoms::erase, std::string, std::string>::with<bool>,
  caf::replies_to<atoms::drop, std::string>::with<bool>,
  caf::replies_to<atoms::status>::with<cache_store_status>>;

/// The supervisor of runs (run_queue.hpp).
using run_queue_actor = caf::typed_actor<
  caf::replies_to<atoms::submit, run_request>::with<submit_result>,
  caf::reacts_to<atoms::flush>,
  caf::replies_to<atoms::sweep, sweep_submission>::with<sweep_submit_result>,
  caf::replies_to<atoms::trial, trial_submission>::with<submit_result>,
  caf::replies_to<atoms::info, std::string>::with<run_info>,
  caf::replies_to<atoms::list, run_list_request>::with<storage::run_page>,
  caf::replies_to<atoms::cancel, std::string>::with<bool>,
  caf::replies_to<atoms::cancel, std::string, std::string>::with<bool>,
  caf::replies_to<atoms::events, std::string, std::uint64_t, std::uint32_t>::with<event_batch>,
  caf::replies_to<atoms::wait, std::string>::with<run_info>,
  caf::replies_to<atoms::erase, std::string>::with<erase_result>,
  caf::reacts_to<atoms::ended, std::string>,
  caf::reacts_to<atoms::worker_update, std::string, std::vector<device_offer>, worker_availability, bool>,
  caf::reacts_to<atoms::worker_gone, std::string, std::string>,
  caf::replies_to<atoms::share, std::string, std::string, bool>::with<bool>,
  caf::reacts_to<atoms::memory_freed, std::string>,
  caf::replies_to<atoms::report>::with<memory_ledger_status>,
  caf::replies_to<atoms::drop, std::string>::with<bool>,
  caf::replies_to<atoms::shutdown>::with<bool>,
  caf::replies_to<atoms::adopt>::with<bool>,
  caf::replies_to<atoms::status>::with<run_queue_status>,
  caf::replies_to<atoms::status, bool>::with<run_queue_status>>;

/// A sweep (sweep_actor.hpp): the supervisor of its runs through the run queue; (cancel) -> false
/// when it has ended already.
using sweep_actor = caf::typed_actor<caf::replies_to<atoms::cancel>::with<bool>>;

/// A study (study_actor.hpp): proposes, follows and prunes its trials through the run queue;
/// (cancel) -> false when it has ended already, as a sweep's; and (tick), which it sends itself to
/// submit again a trial the queue could not take then (a full disk).
using study_actor = sweep_actor::extend<caf::reacts_to<atoms::tick>>;

/// One card shared by memory (device_slot.hpp): a thin shell over policy::card_ledger.
using device_slot_actor = caf::typed_actor<
  caf::reacts_to<atoms::share, std::string, std::vector<std::string>>,
  caf::reacts_to<atoms::report, std::int64_t, std::int64_t>,
  caf::reacts_to<atoms::context, std::int64_t, std::string>,
  caf::replies_to<atoms::ask, std::int64_t>::with<memory_verdict>,
  caf::replies_to<atoms::ask, memory_ask>::with<memory_answer>,
  caf::replies_to<atoms::reserve, std::string, std::int64_t>::with<memory_verdict>,
  caf::reacts_to<atoms::hold, std::string>,
  caf::reacts_to<atoms::adopt, std::string, std::int64_t>,
  caf::reacts_to<atoms::started, std::string>,
  caf::reacts_to<atoms::released, std::string>,
  caf::replies_to<atoms::status>::with<card_memory_status>>;

/// The memory ledger (memory_ledger.hpp): the supervisor of the cards shared by memory.
using memory_ledger_actor = caf::typed_actor<
  caf::reacts_to<atoms::attach, run_queue_actor>,
  caf::replies_to<atoms::share, card_share>::with<bool>,
  caf::replies_to<atoms::ask, memory_ask>::with<memory_answer>,
  caf::reacts_to<atoms::started, std::string>,
  caf::reacts_to<atoms::released, std::string>,
  caf::reacts_to<atoms::report, std::string, std::int64_t, std::int64_t>,
  caf::reacts_to<atoms::context, std::string, std::int64_t, std::string>,
  caf::reacts_to<atoms::memory_freed, std::string>,
  caf::reacts_to<atoms::tick>,
  caf::replies_to<atoms::get, std::string>::with<device_slot_actor>,
  caf::replies_to<atoms::status>::with<memory_ledger_status>>;

/// What a worker's actor tells its supervisor, the registry: a run it let go of, whether the
/// worker's slots admit runs and if not why (passed on to the run queue), a connection it gave up.
using worker_supervisor_actor =
  caf::typed_actor<caf::reacts_to<atoms::released, std::string, std::string>,
                   caf::reacts_to<atoms::worker_update, std::string, std::vector<device_offer>, worker_availability, bool>,
                   caf::reacts_to<atoms::worker_lost, std::string, std::string>>;

/// One worker as the server sees it: its connection, its status and heartbeat deadline, the runs
/// it executes, its pending outputs requests (worker_proxy.hpp). Only the registry talks to it:
/// wire messages come routed by the connection's identity, an accepted hello (join) first.
using worker_proxy_actor = caf::typed_actor<
  caf::reacts_to<atoms::join, worker_join>,
  caf::reacts_to<atoms::wire_in, std::string, heartbeat>,
  caf::reacts_to<atoms::wire_in, std::string, run_update>,
  caf::reacts_to<atoms::wire_in, std::string, run_done>,
  caf::reacts_to<atoms::wire_in, std::string, outputs_reply>,
  caf::reacts_to<atoms::wire_in, std::string, goodbye>,
  caf::replies_to<atoms::drain, bool>::with<bool>,
  caf::reacts_to<atoms::assign, assign_run, caf::actor>,
  caf::reacts_to<atoms::adopt, std::string, caf::actor, std::uint64_t>,
  caf::reacts_to<atoms::stop, std::string, bool, bool>,
  caf::replies_to<atoms::outputs, std::string>::with<outputs_reply>,
  caf::reacts_to<atoms::remove, std::string>,
  caf::reacts_to<atoms::tick>,
  caf::replies_to<atoms::status>::with<worker_proxy_status>>;

/// The supervisor of workers (worker_registry.hpp). Run actors stay caf::actor in its messages.
using worker_registry_actor = worker_supervisor_actor::extend<
  caf::reacts_to<atoms::wire_in, std::string, hello>,
  caf::reacts_to<atoms::wire_in, std::string, heartbeat>,
  caf::reacts_to<atoms::wire_in, std::string, run_update>,
  caf::reacts_to<atoms::wire_in, std::string, run_done>,
  caf::reacts_to<atoms::wire_in, std::string, outputs_reply>,
  caf::reacts_to<atoms::wire_in, std::string, goodbye>,
  caf::replies_to<atoms::outputs, std::string, std::string>::with<outputs_reply>,
  caf::reacts_to<atoms::attach, run_queue_actor>,
  caf::replies_to<atoms::adopt, std::string, std::string, caf::actor, std::uint64_t>::with<bool>,
  caf::reacts_to<atoms::assign, assign_run, std::string, caf::actor>,
  caf::reacts_to<atoms::stop, std::string, bool>,
  caf::reacts_to<atoms::stop, std::string, bool, bool>,
  caf::replies_to<atoms::drain, std::string, bool>::with<bool>,
  caf::replies_to<atoms::enroll, std::string>::with<enrollment>,
  caf::replies_to<atoms::rekey, std::string>::with<enrollment>,
  caf::replies_to<atoms::remove, std::string>::with<enrollment>,
  caf::replies_to<atoms::status>::with<workers_status>,
  caf::replies_to<atoms::proxy_of, std::string>::with<worker_proxy_actor>>;

} // namespace cdui::actors
