#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "messages/fields.hpp"
#include "messages/run_event.hpp"
#include "messages/run_outcome.hpp"

/// What a worker agent and the server say to each other (docs/workers.md; docs/architecture.md,
/// "The wire"). Each struct travels as the payload of one wire message.
namespace cdui {

/// A device a worker offers: its name on the worker (cpu, cuda:1, sim:0), its kind, the card's
/// UUID (which tells a card two offerers share) and its memory.
struct device_offer {
  std::string name;
  std::string kind;  // cpu | cuda | mps | sim
  std::string uuid;
  std::int64_t total_bytes = 0;
  std::int64_t free_bytes = 0;
  /// What the worker's machine says of it: a CUDA card's name, short UUID and memory (NVML); a sim
  /// card's size; empty for the CPU.
  std::string label{};  // {}: aggregates written before it need not name it (-Wmissing-field-initializers)
  CDUI_FIELDS(name, kind, uuid, total_bytes, free_bytes, label)
};

/// The agent's first message.
struct hello {
  std::string name;
  /// cdui's version; another version is refused.
  std::string version;
  /// A digest of the agent's environment (libtorch, CUDA) and of the node types it knows; node
  /// types that differ from the server's make the worker Degraded.
  std::string env_digest;
  std::string node_types_digest;
  std::vector<device_offer> devices;
  /// The session token (same host) or the enrolled credential.
  std::string credential;
  /// Runs the agent is executing now, and runs that ended whose end the server has not
  /// acknowledged (after a reconnect or a server restart, the server resumes or adopts them).
  std::vector<std::string> running_runs;
  bool one_shot = false;
  CDUI_FIELDS(name, version, env_digest, node_types_digest, devices, credential, running_runs,
              one_shot)
};

/// How far the server has a run's events: the last worker cursor it received.
struct run_cursor {
  std::string run_id;
  std::uint64_t cursor = 0;
  CDUI_FIELDS(run_id, cursor)
};

struct welcome {
  std::string server_version;
  std::uint32_t heartbeat_interval_ms = 10000;
  /// For each run the hello listed that the server still follows: send its events after this
  /// cursor (those sent while the connection was down were lost).
  std::vector<run_cursor> resume;
  /// Runs the hello listed that the server no longer follows (they ended there, or it never knew
  /// them): stop them and forget them.
  std::vector<std::string> forget;
  CDUI_FIELDS(server_version, heartbeat_interval_ms, resume, forget)
};

/// The server will not take the agent; `reason` is a sentence for the operator.
struct refused {
  std::string reason;
  /// True when the agent should say hello again (the server restarted and does not know the
  /// connection); false when it must give up until an operator acts (another version, a bad
  /// credential, a newer agent took its name).
  bool retry = false;
  CDUI_FIELDS(reason, retry)
};

/// Every heartbeat interval: each device's memory (the CPU's as the host has it now; a sim card
/// reports its size as free, since its runs' use is measured in their own processes) and the runs
/// executing.
struct heartbeat {
  std::vector<device_offer> devices;
  std::vector<std::string> running_runs;
  CDUI_FIELDS(devices, running_runs)
};

/// A worker's part of a DDP run across workers (docs/ddp.md, "Across workers"): ranks
/// first_rank.. of world_size, one on each of the assignment's devices.
struct ddp_part {
  /// 0: the run is not spread over workers (all its ranks are the assignment's).
  std::int32_t world_size = 0;
  std::int32_t first_rank = 0;
  /// Every rank's card, "worker/device", in rank order.
  std::vector<std::string> devices;
  /// Rank 0's store: empty on rank 0's part, whose agent hosts it at its rendezvous host and
  /// reports where in a ddp_rendezvous event; the other parts get that host and port.
  std::string store_host;
  std::int32_t store_port = 0;
  /// The run's secret: a rank meets the others only with it (sent over the CURVE channel only).
  std::string secret;
  [[nodiscard]] bool spread() const { return world_size > 0; }
  CDUI_FIELDS(world_size, first_rank, devices, store_host, store_port, secret)
};

/// Server -> agent: execute a run on these of the worker's devices (its own names).
struct assign_run {
  std::string run_id;
  std::string name;
  std::string graph_json;
  /// The run's options as the server stores them (a JSON object).
  std::string options_json;
  std::vector<std::string> devices;
  std::uint64_t seed = 0;
  /// A DDP run across workers: this worker's part (run_id is then the part's: "<run>-rank<k>").
  ddp_part ddp;
  CDUI_FIELDS(run_id, name, graph_json, options_json, devices, seed, ddp)
};

/// Agent -> server: events a run appended, in order. `type` and `data` as in run_event; the
/// server gives them its own cursors.
struct run_update {
  std::string run_id;
  std::vector<run_event> events;
  CDUI_FIELDS(run_id, events)
};

/// Agent -> server: the run's subprocess ended. The agent sends it again after a reconnect until
/// the server acknowledges it with run_ack.
struct run_done {
  std::string run_id;
  run_outcome outcome;
  /// The cursor of the run's last event: the server takes the end only once it has them all.
  std::uint64_t last_cursor = 0;
  CDUI_FIELDS(run_id, outcome, last_cursor)
};

/// Server -> agent: events after `cursor` did not all arrive (a message was dropped): send the
/// run's events again from there, then its end if it has ended. Uses run_cursor as its payload.

/// Server -> agent: the run's end is recorded; the agent may forget the run.
struct run_ack {
  std::string run_id;
  CDUI_FIELDS(run_id)
};

/// Server -> agent: the outputs a record_outputs run it executed left on the worker (they stay
/// there, and the server reads them while the worker is connected).
struct outputs_request {
  std::string run_id;
  CDUI_FIELDS(run_id)
};

/// Agent -> server: the run's recorded outputs, described node by node (JSON text, as
/// GET /api/runs/{id}/outputs gives them), or why there are none.
struct outputs_reply {
  std::string run_id;
  bool found = false;
  std::string nodes_json;
  std::string error;
  /// Set by the server, not the agent: the worker could not be asked (away, or no answer).
  bool unavailable = false;
  CDUI_FIELDS(run_id, found, nodes_json, error, unavailable)
};

/// Server -> agent: stop a run between batches (cancelled, or interrupted when `interrupt`).
struct stop_run {
  std::string run_id;
  bool interrupt = false;
  CDUI_FIELDS(run_id, interrupt)
};

/// Agent -> server: the agent stops (`cdui agent stop`, SIGTERM, a one-shot agent whose run has
/// ended), so the server shows the worker disconnected at once instead of after its heartbeats
/// stop; the runs it executes go on, as after a lost connection. `leaving`: the machine goes with
/// the agent (`--ephemeral`: a SLURM allocation or a pod that ends), so its runs cannot come back:
/// the server ends them interrupted (stop_reason::worker_left) at once, and the agent stops their
/// processes. Server -> agent: the same payload back, once noted, so the agent can close its
/// socket knowing it was heard.
struct goodbye {
  std::string reason;
  bool leaving = false;
  CDUI_FIELDS(reason, leaving)
};

/// Whether a worker's slots admit runs now and, when they do not, why: its actor tells the run
/// queue (in-process only, never on the wire), which tells the runs that wait for it.
enum class worker_availability {
  open,
  draining,      // the operator drained it (cdui workers drain)
  late,          // its heartbeats are late (Degraded)
  disconnected,  // its connection is gone
  disabled,
  busy_one_shot, // a one-shot worker executes a single run: it has one
};

[[nodiscard]] constexpr std::string_view to_string(worker_availability x) {
  switch (x) {
  case worker_availability::open: return "open";
  case worker_availability::draining: return "draining";
  case worker_availability::late: return "late";
  case worker_availability::disconnected: return "disconnected";
  case worker_availability::disabled: return "disabled";
  case worker_availability::busy_one_shot: return "busy_one_shot";
  }
  return "?";
}

/// The registry's answer to enroll, rekey and remove (in-process only, never on the wire).
/// A hello the registry accepted, handed to the worker's actor (join; never on the wire): the
/// connection's identity, the hello, and whether the worker is enrolled and draining.
struct worker_join {
  std::string identity;
  hello greeting;
  bool enrolled = false;
  bool draining = false;
  CDUI_FIELDS(identity, greeting, enrolled, draining)
};

struct enrollment {
  std::string name;
  /// The new credential (enroll, rekey): handed out once, never stored.
  std::string credential;
  /// Empty when it was done; else why not, and what kind of refusal: "invalid" (a bad name),
  /// "conflict" (enrolled already), "unknown" (no such worker) or "unavailable" (the worker
  /// registry did not answer).
  std::string error;
  std::string refusal;
  CDUI_FIELDS(name, credential, error, refusal)
};

} // namespace cdui
