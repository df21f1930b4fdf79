// A run's end (actors/server/run_actor_parts.hpp): its outcome recorded in the store and its folder,
// those waiting told, and its cards given back to the queue once nothing of the run holds them.
#include "actors/server/run_actor_parts.hpp"

#include <chrono>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/run_process.hpp"
#include "messages/atoms.hpp"
#include "messages/clock.hpp"
#include "messages/json_text.hpp"
#include "messages/run_outcome.hpp"
#include "messages/stop_reason.hpp"

namespace cdui::actors::run_parts {

namespace {

/// How often an end the store refused is tried again.
constexpr auto end_retry_interval = std::chrono::seconds(1);

/// Records the run's end (its artifacts and final row); false when the store refuses it.
bool record_end(self_ptr self) {
  auto& st = self->state;
  return stored(self, [&] {
    record_artifacts(st);
    st.setup.store->update(st.setup.info);
  });
}

} // namespace

void finish_with(self_ptr self, run_outcome outcome, stop_reason stopped) {
  auto& st = self->state;
  if (!st.prune_reason.empty() && outcome.status == run_status::cancelled) {
    outcome.status = run_status::pruned;
    outcome.error = st.prune_reason;
    stopped = stop_reason::pruned;
  }
  if (st.executor.joinable())
    st.executor.join();
  flush(self);
  // A run in a process of its own that ended without its end event (the process crashed, or a
  // worker run the server ended itself: its worker did not come back): every run's log ends with
  // exactly one.
  bool own_process = !st.setup.worker.empty() || !st.setup.exec_binary.empty();
  if (own_process && st.setup.info.status == run_status::running && !st.ended_event) {
    if (outcome.status == run_status::failed)
      append(self, "execution_error",
             json_text(nlohmann::json{{"kind", "error"}, {"error", outcome.error}}));
    else
      append(self, "execution_stopped", json_text(stopped_data(stopped, outcome.error)));
  }
  if (!st.store_failure.empty() && outcome.status != run_status::failed) {
    // It stopped because the store refused it (or its end would be refused): that is its end.
    append(self, "execution_error",
           json_text(nlohmann::json{{"kind", "error"}, {"error", st.store_failure}}));
    outcome.status = run_status::failed;
    outcome.error = st.store_failure;
  }
  st.setup.info.status = outcome.status;
  st.setup.info.error = outcome.error;
  st.setup.info.final_metrics = outcome.final_metrics;
  st.setup.info.finished_ms = now_ms();
  st.setup.info.queue_position = 0;
  if (!record_end(self)) {
    // Its end waits in this actor, tried again each second until the store takes it (room made
    // on the disk) or the queue is gone (the server stops: the next start ends the run).
    spdlog::error("run {} ended {}, which the store cannot record yet ({})", st.setup.info.id,
                  to_string(st.setup.info.status), st.store_failure);
    st.end_unrecorded = true;
    self->monitor(st.queue);
    self->set_down_handler([self](caf::down_msg& down) {
      if (down.source == self->state.queue.address())
        self->quit();
    });
    self->delayed_send(self, end_retry_interval, atoms::tick::value);
  }
  // Its slot is freed all the same. The queue hears of the end before anyone waiting does, so a
  // question asked after the answer finds the run ended in the queue too (its mailbox is in order).
  // A run across workers keeps its cards until its parts on the other workers have ended too.
  stop_parts(self);
  release_when_parts_end(self);
  wake_waiters(self);
}

void finish(self_ptr self, const run_outcome& outcome) {
  finish_with(self, outcome, stop_reason_of(outcome.status));
}

void retry_recording_end(self_ptr self) {
  auto& st = self->state;
  if (!st.end_unrecorded)
    return;
  if (!record_end(self)) {
    self->delayed_send(self, end_retry_interval, atoms::tick::value);
    return;
  }
  spdlog::info("run {}: its end is recorded now", st.setup.info.id);
  st.end_unrecorded = false;
  if (st.quit_asked)
    self->quit();
}

} // namespace cdui::actors::run_parts
