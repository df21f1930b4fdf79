#pragma once

#include <memory>
#include <string>
#include <utility>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/typed_actor.hpp>

#include "actors/common/zmq_socket_thread.hpp"
#include "messages/atoms.hpp"
#include "messages/wire.hpp"
#include "messages/worker.hpp"

/// What the agent's actors say to each other (the worker's side of docs/architecture.md, "Actors"):
///
/// ```
/// cdui::agent (facade, run() blocks) ──(stop)──> agent ──(ended, reason, refused)──> the facade
/// agent ──(link, wire_link)──> run_supervisor       welcomed: report on it; empty: do not
/// agent ──(resend, cursor)──> run_supervisor        the welcome's resume, or the server's resend
/// agent ──(forget)──> run_supervisor                the server no longer follows the run
/// agent ──(ack)──> run_supervisor                   the server recorded the run's end
/// agent ──(stop, interrupt: bool)──> run_supervisor stop_run: SIGUSR1 (true) or SIGTERM
/// agent ──(quit)──> run_supervisor                  the agent stops; the run's process goes on
/// run_supervisor ──(started, id)──> agent           its process runs
/// run_supervisor ──(ended, id)──> agent             its process has ended (outputs may be read)
/// run_supervisor ──(tick)──> itself                 follows events.jsonl and the process
/// run_supervisor ──(unsent, end: bool, bytes, cursor)──> itself   the socket could not send
/// run_supervisor ──(signal, sig: int)──> ddp_rank   signals rank k's process (a failed rank's others)
/// ddp_rank ──(rank_ended, k, failure)──> run_supervisor   its process exited (failure: empty if it
///                                                   succeeded or was stopped); it quits
/// ddp_rank ──(tick)──> itself                       watches its process
/// anyone ──(supervisor, id)──> agent -> run_supervisor_actor   a run's (introspection, tests)
/// ```
///
/// Each actor has a typed handle below (agent_actor, run_supervisor_actor, ddp_rank_actor): a
/// message it does not declare, or a handler missing, is a compile error.
///
/// The agent monitors each run supervisor: one that quits normally is done with its run (the
/// server acknowledged or forgot it, or the agent stops); one that dies otherwise fails its run.
/// A DDP run's supervisor spawns a ddp_rank for each rank k > 0, linked: when either dies of an
/// error, the rank's process is killed and the supervisor dies too (its run fails).
namespace cdui::actors {

namespace agent_atoms {
using link = caf::atom_constant<caf::atom("cd_link")>;
using resend = caf::atom_constant<caf::atom("cd_resend")>;
using forget = caf::atom_constant<caf::atom("cd_forget")>;
using ack = caf::atom_constant<caf::atom("cd_ack")>;
using unsent = caf::atom_constant<caf::atom("cd_unsent")>;
using started = caf::atom_constant<caf::atom("cd_started")>;
using supervisor = caf::atom_constant<caf::atom("cd_superv")>;
using rank_ended = caf::atom_constant<caf::atom("cd_rankend")>;
using signal = caf::atom_constant<caf::atom("cd_signal")>;
} // namespace agent_atoms

/// The agent's connection as a run supervisor sees it: set while a server has welcomed it, empty
/// otherwise. Weak: a replaced connection's socket goes when the agent drops it.
struct wire_link {
  std::weak_ptr<zmq_socket_thread> socket;
};

} // namespace cdui::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cdui::actors::wire_link)

namespace cdui::actors {

/// A DDP rank k > 0's watcher (ddp_rank.hpp).
using ddp_rank_actor = caf::typed_actor<caf::reacts_to<atoms::tick>, caf::reacts_to<agent_atoms::signal, int>>;

/// One run's supervisor (run_supervisor.hpp).
using run_supervisor_actor = caf::typed_actor<
  caf::reacts_to<atoms::tick>,
  caf::reacts_to<agent_atoms::link, wire_link>,
  caf::reacts_to<agent_atoms::unsent, bool, std::uint64_t, std::uint64_t>,
  caf::reacts_to<agent_atoms::resend, std::uint64_t>,
  caf::reacts_to<agent_atoms::forget>,
  caf::reacts_to<agent_atoms::ack>,
  caf::reacts_to<atoms::stop, bool>,
  caf::reacts_to<agent_atoms::rank_ended, int, std::string>,
  caf::reacts_to<atoms::quit>>;

/// The agent's connection (agent_actor.hpp): the server's messages as its socket decodes them,
/// tagged with the connection's number, and its supervisors' news.
using agent_actor = caf::typed_actor<
  caf::reacts_to<atoms::tick>,
  caf::reacts_to<atoms::wire_in, std::uint64_t, welcome>,
  caf::reacts_to<atoms::wire_in, std::uint64_t, assign_run>,
  caf::reacts_to<atoms::wire_in, std::uint64_t, run_cursor>,
  caf::reacts_to<atoms::wire_in, std::uint64_t, run_ack>,
  caf::reacts_to<atoms::wire_in, std::uint64_t, outputs_request>,
  caf::reacts_to<atoms::wire_in, std::uint64_t, stop_run>,
  caf::reacts_to<atoms::wire_in, std::uint64_t, refused>,
  caf::reacts_to<atoms::wire_in, std::uint64_t, goodbye>,
  caf::reacts_to<agent_atoms::started, std::string>,
  caf::reacts_to<atoms::ended, std::string>,
  caf::reacts_to<atoms::deadline>,
  caf::replies_to<agent_atoms::supervisor, std::string>::with<run_supervisor_actor>,
  caf::reacts_to<atoms::stop>>;

/// Sends `payload` as one wire message ([envelope][payload]) on `link`; false when there is no
/// connection. `sent` is told, on the socket's thread, whether the socket took it.
template <class T>
bool send_to_server(const wire_link& link, wire::message_type type, const T& payload,
                    zmq_socket_thread::sent_handler sent = {}) {
  auto socket = link.socket.lock();
  if (!socket)
    return false;
  socket->send({wire::encode_envelope({wire::protocol_version, type, 0, ""}), wire::encode(payload)},
               std::move(sent));
  return true;
}

} // namespace cdui::actors
