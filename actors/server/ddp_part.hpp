#pragma once

#include <string>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/server/fwd.hpp"
#include "messages/worker.hpp"

namespace cdui::actors {

/// What a worker's part of a DDP run across workers starts with (docs/ddp.md, "Across workers").
struct worker_part_setup {
  /// The part as its worker's agent gets it: run id "<run>-rank<k>", its devices, its ddp_part.
  assign_run assignment;
  std::string worker;
  worker_registry_actor registry;
  /// The run it is a part of (its run actor), held weakly: the run holds its parts, and a cycle
  /// would keep both alive when the server stops.
  caf::actor_addr run;
  /// A part a server before a restart assigned: it is followed (the registry adopts it), and
  /// assigned again when its worker lacks it (never when the run's secret was lost).
  bool adopted = false;
};

struct worker_part_state {
  worker_part_setup setup;
  static inline const char* name = "worker_part";
};

/// A worker's part of a DDP run across workers, on the server: to the registry and the worker's
/// proxy it is a run (they send it its updates and its end, as to a run actor); it assigns the
/// part to the worker and tells its run (part_ended, worker, outcome) once the part has ended,
/// then quits. The part's own failure comes from its agent in a failed rank's words; an end the
/// server made (its worker lost or removed) is put in those words here: `DDP rank 2 of 4 (on
/// worker 'w2') failed: ...`. (stop, interrupt) stops the part on its worker. When its run actor
/// is gone it quits: a run that ended stopped its parts first, and on a server that stops the
/// part goes on for the next server to adopt.
caf::behavior worker_part(caf::stateful_actor<worker_part_state>* self, worker_part_setup setup);

} // namespace cdui::actors
