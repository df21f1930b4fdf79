#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/run_status.hpp"

namespace cdui {

/// options.target.memory_gib counts in GiB: this many bytes each.
inline constexpr double bytes_per_gib = 1024.0 * 1024.0 * 1024.0;
/// The largest memory_gib a run may declare: 1 PiB, past any card, still exact in bytes.
inline constexpr double max_memory_gib = 1024.0 * 1024.0;

/// Where a run waits: in its device's queue for a slot, or in the interactive lane, which starts
/// it at once, outside the queue (an editor's run).
enum class run_lane : std::uint8_t { queued, interactive };

/// "queued" or "interactive", as options.lane says it.
[[nodiscard]] constexpr std::string_view to_string(run_lane x) {
  return x == run_lane::interactive ? "interactive" : "queued";
}

/// The lane options.lane names; nullopt for anything else.
[[nodiscard]] constexpr std::optional<run_lane> parse_run_lane(std::string_view text) {
  if (text == "queued")
    return run_lane::queued;
  if (text == "interactive")
    return run_lane::interactive;
  return std::nullopt;
}

/// What a front door asks for when it submits a run: the graph (JSON text) and the run's options.
struct run_request {
  std::string graph_json;
  std::string name;
  /// The run's default device; nodes without a device of their own use it. Empty: each node's own.
  std::string device;
  /// The seed of every random number generator of the run, when has_seed; otherwise one is drawn
  /// and recorded in the run's execution_start event.
  bool has_seed = false;
  std::uint64_t seed = 0;
  /// Asks libtorch for deterministic algorithms while the run executes.
  bool deterministic = false;
  /// Keeps every node's outputs in the run output store after the run.
  bool record_outputs = false;
  /// Keeps each model node's weights in the node state store and starts from them next time.
  bool weights_persistent = false;
  run_lane lane = run_lane::queued;
  /// The editor session an interactive run belongs to; each session has one at a time.
  std::string session;
  /// A device set (options.target.devices): the run holds a slot on each and executes on the first.
  std::vector<std::string> devices;
  /// The worker that executes the run (options.target.worker); empty or "local": this server.
  std::string worker;
  /// The run's memory budget per card, in bytes (options.target.memory_gib); 0: none declared.
  std::int64_t memory_bytes = 0;
  /// Where the declared budget came from: "" (typed) or "estimate" (options.target.memory_source).
  std::string memory_source;
  /// options.target.wait, when has_wait: whether a run that does not fit a shared card now waits.
  bool has_wait = false;
  bool wait = false;
  /// options.resume_from: the TrainingLoop checkpoint (a file, or a run's folder) the run
  /// continues from, on the machine that executes it; empty: from the start.
  std::string resume_from;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_request& x) {
  return f(x.graph_json, x.name, x.device, x.has_seed, x.seed, x.deterministic, x.record_outputs,
           x.weights_persistent, x.lane, x.session, x.devices, x.worker, x.memory_bytes,
           x.memory_source, x.has_wait, x.wait, x.resume_from);
}

/// What anyone may ask about a run.
struct run_info {
  std::string id;
  std::string name;
  run_status status = run_status::queued;
  /// The device key whose queue the run waits in (cpu, cuda:0, sim:1); the first of a device set.
  std::string queue_key;
  /// 1-based place in its queue while it waits there, else 0.
  std::uint32_t queue_position = 0;
  /// Why a queued run waits beyond its place, when the queue knows more (memory on a shared card).
  std::string waiting_reason;
  std::string error;
  std::int64_t created_ms = 0;
  std::int64_t started_ms = 0;
  std::int64_t finished_ms = 0;
  /// Final metrics of every node that reported any, as a JSON object {node id: {name: value}}.
  std::string final_metrics = "{}";
  /// The run's options as submitted, a JSON object.
  std::string options = "{}";
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_info& x) {
  return f(x.id, x.name, x.status, x.queue_key, x.queue_position, x.waiting_reason, x.error, x.created_ms,
           x.started_ms, x.finished_ms, x.final_metrics, x.options);
}

/// A page of runs, newest first (GET /api/runs): of one status, worker (`local`: the server's own)
/// and device, each empty for all; `limit` 0 for all.
struct run_list_request {
  std::string status;
  std::string worker;
  std::string device;
  std::uint64_t limit = 0;
  std::uint64_t offset = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_list_request& x) {
  return f(x.status, x.worker, x.device, x.limit, x.offset);
}

} // namespace cdui
