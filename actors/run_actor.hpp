#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "messages/run_event.hpp"
#include "messages/run_request.hpp"
#include "runtime/engine.hpp"
#include "storage/run_directory.hpp"

namespace cdui::actors {

/// Everything a run actor starts with.
struct run_setup {
  run_info info;
  std::shared_ptr<const runtime::validated_graph> graph;
  std::shared_ptr<storage::run_directory> dir;
  runtime::run_context context;  // all but emit and stop, which the actor fills in
};

/// Someone waiting for events after `cursor` (or, with cursor = max, for the run's end).
struct event_waiter {
  std::uint64_t id;
  std::uint64_t cursor;
  caf::response_promise promise;
};

struct run_state {
  run_setup setup;
  std::vector<run_event> events;
  std::vector<event_waiter> waiters;
  std::vector<caf::response_promise> end_waiters;
  std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
  caf::actor slot;
  std::string slot_key;
  std::thread executor;
  std::uint64_t next_waiter = 0;
  ~run_state();
  static inline const char* name = "run";
};

/// Most events one answer carries; a reader asks again from the last cursor.
inline constexpr std::size_t max_events_per_answer = 1000;

/// One run: queued -> running -> succeeded | failed | cancelled, and its event log. A grant from its
/// device slot starts the engine on a thread of its own (never on a CAF scheduler thread); the
/// thread posts events and the outcome back as messages.
/// Protocol: (grant, slot key); (append, type, data); (finished, run_outcome);
/// (cancel) -> bool; (info) -> run_info; (events, cursor, wait_ms) -> event_batch;
/// (wait) -> run_info once the run has ended.
caf::behavior run_actor(caf::stateful_actor<run_state>* self, run_setup setup, caf::actor slot);

} // namespace cdui::actors
