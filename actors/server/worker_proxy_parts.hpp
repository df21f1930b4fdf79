#pragma once

// The worker proxy's parts, internal to it: worker_proxy.cpp (the connection: hello, heartbeats,
// goodbye, status) and worker_proxy_runs.cpp (the runs it was given, followed to their ends).

#include <optional>
#include <string>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/server/worker_proxy.hpp"
#include "messages/stop_reason.hpp"

namespace cdui::actors::proxy_parts {

using self_ptr = worker_proxy_actor::stateful_pointer<worker_proxy_state>;

/// Whether the worker's agent is connected now.
inline bool connected(const worker_proxy_state& st) { return !st.setup.identity.empty(); }

template <class T>
void send_to(self_ptr self, const std::string& identity, wire::message_type type, const T& payload) {
  self->state.setup.bridge->send(identity, type, wire::encode(payload));
}

/// To the worker's current connection.
template <class T>
void reply(self_ptr self, wire::message_type type, const T& payload) {
  send_to(self, self->state.setup.identity, type, payload);
}

/// Whether the worker's slots admit runs now, and if not, why. A one-shot worker executes a single
/// run, then its agent exits: once it has one, it is closed.
worker_availability availability(const worker_proxy_state& st);
/// Tells the registry (and through it the run queue) whether the worker's slots admit runs.
void announce(self_ptr self);
void log_status(const policy::worker_record& w);

/// Asks the agent to send the run's events again after what the server has.
void ask_resend(self_ptr self, const std::string& run_id, remote_run& run);
/// The run, when this worker was given it: a worker reports on its own runs only.
remote_run* run_of(self_ptr self, const std::string& run_id);
/// Forgets the run and tells the registry, which routes to this proxy by run id.
void release(self_ptr self, const std::string& run_id);
/// Ends a run here; the run actor adds its end event, execution_stopped with `stopped` as its
/// word for a cancelled or interrupted one (a cancel's or the server's stop by default).
void end_run(self_ptr self, const std::string& run_id, run_status status, const std::string& why,
             std::optional<stop_reason> stopped = std::nullopt);

/// The agent's report on a run: new events (in cursor order; a gap asks for them again), its end.
void on_run_update(self_ptr self, const run_update& u);
void on_run_done(self_ptr self, const run_done& d);
/// The registry gives the worker a run: it is sent to the agent.
void on_assign(self_ptr self, assign_run& a, const caf::actor& run);
/// A cancel (or, `interrupt`, the server's stop) of one of its runs, sent again whenever the worker
/// joins again until the run has ended. While the worker is away the run ends at once, or, with
/// `wait_for_worker` (a part of a DDP run across workers, whose cards a rank may hold), it waits
/// for the worker to come back and stop it, or for the grace to give it up.
void on_stop(self_ptr self, const std::string& run_id, bool interrupt, bool wait_for_worker);
/// An operator removed the worker: its runs are stopped there and end failed, its connection is
/// refused for good, and the proxy quits.
void on_remove(self_ptr self, const std::string& reason);

} // namespace cdui::actors::proxy_parts
