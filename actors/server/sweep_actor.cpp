#include "actors/server/sweep_actor.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/guarded.hpp"
#include "actors/policy/sweep_ranking.hpp"
#include "messages/clock.hpp"

namespace cdui::actors {

namespace {

using self_ptr = sweep_actor::stateful_pointer<sweep_actor_state>;

/// Its last run has ended: the final state goes to cdui.db and the sweep's actor quits.
void finish(self_ptr self) {
  auto& st = self->state;
  std::vector<run_status> statuses;
  for (const auto& child : st.store->sweep_children(st.sweep.id))
    statuses.push_back(child.run.status);
  auto state = policy::state_of(statuses, st.sweep.cancel_asked);
  if (!policy::is_final(state)) {
    // A run the store still lists as unfinished (its actor went with a server that stops): the
    // sweep stays active, and the next start picks it up.
    self->quit();
    return;
  }
  st.sweep.state = policy::to_string(state);
  st.sweep.finished_ms = now_ms();
  st.store->update_sweep(st.sweep);
  spdlog::info("sweep {} {}: {} runs", st.sweep.id, st.sweep.state, statuses.size());
  self->quit();
}

/// finish(), whose store may refuse it (a full disk): then the sweep stays active in the store,
/// and the next start ends it, as when its runs went with a stopping server.
void try_finish(self_ptr self) {
  try {
    finish(self);
  } catch (const std::exception& e) {
    spdlog::error("sweep {}: its end is not recorded ({}); the next start records it", self->state.sweep.id,
                  e.what());
    self->quit();
  }
}

void ended(self_ptr self, const std::string& id) {
  auto& st = self->state;
  if (st.waiting.erase(id) > 0 && st.waiting.empty())
    try_finish(self);
}

} // namespace

sweep_actor::behavior_type sweep_supervisor(self_ptr self, sweep_record sweep,
                                            std::vector<std::string> runs, run_queue_actor queue,
                                            std::shared_ptr<storage::run_store> store) {
  auto& st = self->state;
  st.sweep = std::move(sweep);
  st.queue = queue;
  st.store = std::move(store);
  st.waiting.insert(runs.begin(), runs.end());
  if (st.waiting.empty())
    try_finish(self);  // nothing to wait for (its runs were erased): it ends at once
  for (const auto& id : runs)
    self->request(queue, caf::infinite, atoms::wait::value, id)
      .then([=](run_info&) { ended(self, id); },
            [=](caf::error&) {
              // An erased run has ended too; one still unfinished in the store went with its
              // actor, as the server stops.
              try {
                auto stored = self->state.store->find(id);
                if (!stored || is_final(stored->info.status))
                  ended(self, id);
              } catch (const std::exception& e) {
                spdlog::error("sweep {}: {}", self->state.sweep.id, e.what());
              }
            });
  return guarded_typed_behavior<sweep_actor>("sweep", [=](atoms::cancel) {
    auto& st = self->state;
    if (st.waiting.empty())
      return false;
    if (!st.sweep.cancel_asked) {
      st.sweep.cancel_asked = true;
      st.store->update_sweep(st.sweep);
    }
    for (const auto& id : st.waiting)
      self->request(st.queue, caf::infinite, atoms::cancel::value, id).then([](bool) {}, [](caf::error&) {});
    return true;
  });
}

} // namespace cdui::actors
