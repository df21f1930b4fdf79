#include "actors/server/ddp_part.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/common/deadlines.hpp"
#include "actors/server/worker_registry.hpp"
#include "messages/atoms.hpp"
#include "messages/stop_reason.hpp"

namespace cdui::actors {

namespace {

using self_ptr = caf::stateful_actor<worker_part_state>*;

/// Tells the run the part has ended, and quits.
void report(self_ptr self, const run_outcome& outcome) {
  auto& s = self->state.setup;
  if (auto run = caf::actor_cast<caf::actor>(s.run))
    self->send(run, atoms::part_ended::value, s.worker, outcome);
  self->quit();
}

/// The part's end from its worker's actor: the answer (the agent's acknowledgement, after which it
/// forgets the part) waits until the run has noted the end in its ddp.json, so that a server
/// restarted after it does not send the part again. Then it quits.
caf::result<void> report_noted(self_ptr self, const run_outcome& outcome) {
  auto& s = self->state.setup;
  auto run = caf::actor_cast<caf::actor>(s.run);
  if (!run) {
    self->quit();
    return caf::unit;
  }
  auto rp = self->make_response_promise();
  auto done = [self, rp]() mutable {
    rp.deliver(caf::unit);
    self->quit();
  };
  self->request(run, request_deadline, atoms::part_ended::value, s.worker, outcome)
    .then([done]() mutable { done(); }, [done](caf::error&) mutable { done(); });
  return caf::delegated<void>{};
}

/// `why` in a failed rank's words: `DDP rank 2 of 4 (on worker 'w2') failed: why`.
std::string rank_failure(const worker_part_setup& s, const std::string& why) {
  return "DDP rank " + std::to_string(s.assignment.ddp.first_rank) + " of " + std::to_string(s.assignment.ddp.world_size)
         + " (on worker '" + s.worker + "') failed: " + why;
}

void assign(self_ptr self) {
  auto& s = self->state.setup;
  if (s.adopted && s.assignment.ddp.secret.empty()) {
    // Its worker does not have it, and the secret its ranks need is lost (the run's ddp.json).
    report(self, {run_status::failed,
                  rank_failure(s, "the worker does not have its part of the run, and the run's secret, which "
                                  "its ranks need to meet, is lost (ddp.json in the run's folder)"),
                  "{}"});
    return;
  }
  auto a = s.assignment;
  self->send(s.registry, atoms::assign::value, std::move(a), s.worker, caf::actor_cast<caf::actor>(self));
}

} // namespace

caf::behavior worker_part(self_ptr self, worker_part_setup setup) {
  self->state.setup = std::move(setup);
  self->monitor(self->state.setup.run);
  self->set_down_handler([=](const caf::down_msg& down) {
    if (down.source == self->state.setup.run)
      self->quit();
  });
  auto& s = self->state.setup;
  // An adopted part: its run has the registry follow it (run_parts.cpp); a new one goes to its
  // worker now.
  if (!s.adopted)
    assign(self);
  return {
    // A part's ranks write no events of the run (rank 0's worker does).
    [=](atoms::append, std::vector<run_event>&) {},
    [=](atoms::finished, const run_outcome& outcome) -> caf::result<void> {
      // From its agent: a rank's failure is in its words already; a refusal of the part (a
      // worker that cannot prepare its folder, say) is put in them here.
      auto said = outcome;
      if (said.status == run_status::failed && said.error.rfind("DDP rank ", 0) != 0)
        said.error = rank_failure(self->state.setup, said.error);
      return report_noted(self, said);
    },
    [=](atoms::finished, const run_outcome& outcome, stop_reason) -> caf::result<void> {
      // Ended by the server, not by its agent: its worker was lost or removed.
      auto said = outcome;
      if (said.status != run_status::succeeded)
        said = {run_status::failed, rank_failure(self->state.setup, outcome.error), outcome.final_metrics};
      return report_noted(self, said);
    },
    // Its worker came back without it: it goes again.
    [=](atoms::assign) { assign(self); },
    [=](atoms::stop, bool interrupt) {
      const auto& s = self->state.setup;
      // A worker that is away keeps its part (and its cards) until it comes back and stops it, or
      // the grace gives it up: a rank there may still hold a card.
      self->send(s.registry, atoms::stop::value, s.assignment.run_id, interrupt, true);
    },
  };
}

} // namespace cdui::actors
