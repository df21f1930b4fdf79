#include "actors/server/run_actor_parts.hpp"

#include <atomic>
#include <chrono>
#include <mutex>

#include <caf/all.hpp>

#include "actors/common/env_settings.hpp"
#include "messages/atoms.hpp"
#include "messages/json_text.hpp"
#include "messages/stop_reason.hpp"

namespace cdui::actors {

namespace {

std::atomic<int> abandoned{0};

} // namespace

namespace run_parts {

void abandon_executor(run_state& st, const std::string& reason) {
  std::lock_guard lock{st.buffer->mutex};
  st.buffer->closed = true;
  if (!st.setup.exec_binary.empty()) {
    st.buffer->kill_reason = reason;
  } else {
    st.buffer->abandoned = true;
    ++abandoned;  // under the lock the thread takes when it ends, so the count is exact
  }
}

void ask_to_stop(self_ptr self, bool interrupt) {
  auto& st = self->state;
  if (interrupt)
    st.interrupt->store(true);
  st.stop->store(true);
  if (st.setup.info.status != run_status::running)
    return;
  if (!st.setup.worker.empty())
    self->send(st.setup.registry, atoms::stop::value, st.setup.info.id, interrupt);
  else
    self->delayed_send(self, std::chrono::milliseconds(st.setup.stop_deadline_ms), atoms::deadline::value);
}

/// The run did not reach a stop check in time (a read that blocks, a batch that takes minutes):
/// it ends interrupted now and frees its slot; its thread is abandoned, and what it emits from here
/// on is dropped.
void miss_stop_deadline(self_ptr self) {
  auto& st = self->state;
  if (is_final(st.setup.info.status) || !st.executor.joinable())
    return;
  flush(self);
  bool in_process = !st.setup.exec_binary.empty();
  std::string where;
  {
    std::lock_guard lock{st.buffer->mutex};
    where = st.buffer->current_node;
  }
  auto reason = "the run did not stop within " + seconds_text(st.setup.stop_deadline_ms) + " s of its "
                + (st.interrupt->load() ? "server's stop" : "cancel")
                + (where.empty() ? std::string{} : "; " + where + " was executing")
                + " and never reached a stop check (CODEFYUI_STOP_DEADLINE_S); "
                + (in_process ? "its process was killed" : "it was ended without it");
  abandon_executor(st, reason);
  append(self, "execution_stopped", json_text(stopped_data(stop_reason::timeout, reason)));
  if (in_process)
    return;  // the executor kills the process within a moment and posts the end
  st.executor.detach();
  finish(self, run_outcome{run_status::interrupted, reason, "{}"});
}

void executor_returned(event_buffer& buffer) {
  std::lock_guard lock{buffer.mutex};
  if (buffer.abandoned)
    --abandoned;
}

} // namespace run_parts

int abandoned_executors() {
  return abandoned.load();
}

run_state::~run_state() {
  // A run that ended was joined in finish(). One still executing means the actor ended first (a
  // kill, a bug): the run's queue fails it when it hears of the actor's end, which it does only
  // once this returns, so this must not wait for the run to reach a stop check. A process is
  // killed (within a moment: the executor then returns); a thread is left to end alone.
  if (!executor.joinable())
    return;
  stop->store(true);
  run_parts::abandon_executor(*this, "the run's actor ended before the run did");
  if (setup.exec_binary.empty())
    executor.detach();
  else
    executor.join();
}

} // namespace cdui::actors
