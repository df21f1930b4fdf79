#include "actors/device_slot.hpp"

#include <caf/all.hpp>

#include "messages/atoms.hpp"

namespace cdui::actors {

namespace {

void pump(caf::stateful_actor<device_slot_state>* self) {
  for (const auto& run_id : self->state.queue.admit())
    if (auto i = self->state.runs.find(run_id); i != self->state.runs.end())
      self->send(i->second, atoms::grant::value, self->state.queue.key());
}

} // namespace

caf::behavior device_slot(caf::stateful_actor<device_slot_state>* self, std::string key, int limit) {
  self->state.queue = slot_queue{std::move(key), limit};
  return {
    [=](atoms::enqueue, const std::string& run_id, const caf::actor& run) {
      self->state.runs[run_id] = run;
      self->state.queue.enqueue(run_id);
      pump(self);
    },
    [=](atoms::dequeue, const std::string& run_id) {
      bool removed = self->state.queue.remove(run_id);
      if (removed)
        self->state.runs.erase(run_id);
      return removed;
    },
    [=](atoms::release, const std::string& run_id) {
      self->state.queue.release(run_id);
      self->state.runs.erase(run_id);
      pump(self);
    },
  };
}

} // namespace cdui::actors
