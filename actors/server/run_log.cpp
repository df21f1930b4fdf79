#include "actors/server/run_actor_parts.hpp"

#include <filesystem>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "messages/atoms.hpp"
#include "messages/clock.hpp"
#include "messages/json_text.hpp"
#include "messages/stop_reason.hpp"
#include "storage/run_directory.hpp"
#include "storage/run_store.hpp"

namespace cdui::actors {

namespace run_parts {

namespace {

/// A pruned run's execution_stopped: the engine (or the worker's) said `cancelled`, since a prune
/// stops a run as a cancel does; the log says `pruned` and why.
std::string pruned_stop(const std::string& data, const std::string& reason) {
  auto stopped = stopped_reason(nlohmann::json::parse(data, nullptr, false));
  if (stopped && *stopped != stop_reason::cancelled)
    return data;  // a missed stop deadline stays a timeout
  return json_text(stopped_data(stop_reason::pruned, reason));
}

} // namespace

event_batch events_after(const run_state& st, std::uint64_t cursor) {
  event_batch batch;
  batch.events = st.setup.store->events_after(st.setup.info.id, cursor, max_events_per_answer);
  auto last_read = batch.events.empty() ? cursor : batch.events.back().cursor;
  batch.finished = is_final(st.setup.info.status) && last_read >= st.last_cursor;
  return batch;
}

void wake_waiters(self_ptr self) {
  auto& st = self->state;
  bool ended = is_final(st.setup.info.status);
  std::vector<event_waiter> still;
  for (auto& w : st.waiters) {
    if (w.cursor < st.last_cursor || ended)
      w.promise.deliver(events_after(st, w.cursor));
    else
      still.push_back(std::move(w));
  }
  st.waiters = std::move(still);
  if (ended) {
    for (auto& p : st.end_waiters)
      p.deliver(st.setup.info);
    st.end_waiters.clear();
  }
}

void let_waiters_go(self_ptr self, const std::string& why) {
  auto& st = self->state;
  for (auto& p : st.end_waiters)
    p.deliver(caf::make_error(caf::sec::runtime_error, why));
  st.end_waiters.clear();
  for (auto& w : st.waiters)
    w.promise.deliver(events_after(st, w.cursor));
  st.waiters.clear();
}

void store_failed(self_ptr self, const std::string& what) {
  auto& st = self->state;
  if (!st.store_failure.empty())
    return;
  st.store_failure = "the server cannot record the run: " + what;
  spdlog::error("run {}: {}", st.setup.info.id, st.store_failure);
  ask_to_stop(self, false);
}

void append_events(self_ptr self, std::vector<run_event> events) {
  auto& st = self->state;
  if (events.empty())
    return;
  auto time = now_ms();
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!st.prune_reason.empty() && events[i].type == "execution_stopped")
      events[i].data = pruned_stop(events[i].data, st.prune_reason);
    events[i].cursor = st.last_cursor + i + 1;
    if (events[i].time_ms == 0)
      events[i].time_ms = time;
    const auto& type = events[i].type;
    if (type == "execution_complete" || type == "execution_error" || type == "execution_stopped")
      st.ended_event = true;
  }
  if (!stored(self, [&] { st.setup.store->append_events(st.setup.info.id, events); }))
    return;
  st.last_cursor = events.back().cursor;
  if (st.setup.dir)
    for (const auto& e : events)
      st.setup.dir->append(e);
}

void append_all(self_ptr self, std::vector<std::pair<std::string, std::string>> items) {
  std::vector<run_event> events;
  for (auto& [type, data] : items)
    events.push_back({0, 0, std::move(type), std::move(data)});
  append_events(self, std::move(events));
}

void append(self_ptr self, const std::string& type, std::string data) {
  append_all(self, {{type, std::move(data)}});
}

void flush(self_ptr self) {
  std::vector<std::pair<std::string, std::string>> items;
  {
    std::lock_guard lock{self->state.buffer->mutex};
    items.swap(self->state.buffer->pending);
  }
  append_all(self, std::move(items));
}

void record_artifacts(const run_state& st) {
  if (!st.setup.dir)
    return;
  std::error_code ec;
  auto root = st.setup.dir->path();
  for (std::filesystem::recursive_directory_iterator i{st.setup.dir->checkpoints(), ec}, end;
       !ec && i != end; i.increment(ec)) {
    if (i->is_regular_file(ec))
      st.setup.store->add_artifact(
        st.setup.info.id,
        {std::filesystem::relative(i->path(), root, ec).string(), i->file_size(ec)});
  }
}

} // namespace run_parts

void append_stored_event(storage::run_store& store, storage::run_directory* dir,
                         const std::string& run_id, const std::string& type,
                         const std::string& data) {
  run_event e{store.last_cursor(run_id) + 1, now_ms(), type, data};
  store.append_event(run_id, e);
  if (dir)
    dir->append(e);
}

} // namespace cdui::actors
