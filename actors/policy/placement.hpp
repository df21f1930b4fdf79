#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "actors/policy/admission.hpp"
#include "devices/device.hpp"
#include "messages/run_request.hpp"
#include "messages/slot_key.hpp"
#include "messages/worker.hpp"

namespace cdui::policy {

/// The first node of a graph that names a device: the device as written, and the field that
/// names it in refusals ("node 'id' (Type), param 'device'"). Empty device: no node names one.
struct device_hint {
  std::string device;
  std::string field;
};

/// This server's own devices, as placement sees them.
struct local_devices {
  std::vector<devices::offered_device> devices;
  devices::host_devices counts;
};

/// A worker as the queue knows it: the devices it offers (its own names) and whether its slots
/// admit runs now (it is connected and not draining), and if not, why.
struct known_worker {
  std::vector<std::string> devices;
  /// Each device's card UUID, in the same order (empty: unknown, never matched).
  std::vector<std::string> uuids;
  bool open = false;
  bool one_shot = false;
  /// While it is not open: why (draining, disconnected, ...), for the runs that wait for it.
  worker_availability closed = worker_availability::disconnected;
};
/// Every worker seen since the server started, by name.
using known_workers = std::map<std::string, known_worker>;

/// A run for any worker or the one-shot pool, waiting for a free slot of its device kind.
struct floating_run {
  std::string kind;  // cpu, cuda, sim, ...; empty: the first accelerator of any kind
  bool pool = false;  // the one-shot pool: one-shot workers only, never this server
  bool keeps_outputs = false;  // record_outputs: never a one-shot worker, which exits with them
  /// A device set (target.devices, by a worker's own names, all of `kind`): the run takes the
  /// whole set on one worker, whose run renumbers it from :0; on this server only a set of its
  /// one first card. Empty: one device of `kind`.
  std::vector<std::string> devices{};

  /// Whether the run may take `device`: one of its kind, or any accelerator when it names none.
  [[nodiscard]] bool fits(const std::string& device) const;
};

/// Where a run goes.
struct placement {
  /// The slots it queues for: one, or a device set (all taken at once). Empty for a floating run.
  std::vector<slot_key> keys;
  /// A run for any worker or the pool: placed when a slot of its kind is free (free_slots()).
  std::optional<floating_run> floating;
  /// The device its run context names (the option's, or a device set's first); empty: its nodes
  /// decide. Always empty for a worker run, whose devices are renumbered inside the run.
  std::string run_device;
  /// The device option could not be honoured as written: a run_warning of kind device_fallback.
  std::optional<std::string> fallback_warning;

  /// The queue the run waits in: its first slot's, or "any" / "one-shot" until it is placed.
  [[nodiscard]] std::string queue_key() const;
};

/// Where a submitted run goes, or the refusal's sentence naming the option or node at fault:
/// - no target: the device option, else `hint` (the first node naming one), else the CPU, on this
///   server, resolved with the fallback rules (a fallback of the option is warned of; when the
///   option's accelerator kind fell back to the CPU and an open worker offers that kind, the
///   warning names it and `--target NAME`);
/// - target.devices alone: a device set of this server; each must be one it offers, exactly;
/// - target.devices of WORKER/DEVICE cards: a set across workers (docs/ddp.md), each a card its
///   worker offers (one that has connected since the server started, unless `resuming`), the keys
///   worker by worker in the order the workers first appear;
/// - target.worker NAME: that worker's devices (target.devices or the device option, else the
///   first of the hint's kind, else its first accelerator, else its CPU; with `slots`, the first
///   such card that is idle now, so that a run does not queue behind a busy card while another
///   of its kind is free, else the first); the worker must have
///   connected since the server started (unless `resuming` with devices already chosen) and offer
///   each. A one-shot worker cannot keep recorded outputs;
/// - target.worker "any" / the pool: floating; refused when nothing known offers its kind.
/// `resuming`: a run queued before a restart, re-placed before its workers have said hello.
[[nodiscard]] std::variant<placement, std::string> place(const run_request& req, const device_hint& hint,
                                                         const local_devices& local,
                                                         const known_workers& workers, bool resuming,
                                                         const admission* slots = nullptr);

/// The slots a floating run may use, in the order it looks at them: workers' in name order (never
/// a one-shot worker for a run that keeps outputs, only one-shot workers for the pool), then this
/// server's (not for the pool), only devices of its kind. `open_only`: only workers whose slots
/// admit runs now (connected, not draining); else also those away, which it may use once back.
[[nodiscard]] std::vector<slot_key> candidate_slots(const floating_run& run, const known_workers& workers,
                                                    const local_devices& local, bool open_only = true);

/// Where a floating run may go now. It only takes a slot that would start it at once
/// (admission::idle): it never jumps a device's queue.
struct floating_slots {
  /// The first such slot not shared by memory: it takes it by count.
  std::optional<slot_key> by_count;
  /// For a run with a device set: the first worker's whole set, every slot idle and none shared
  /// by memory (a set is admitted by count); empty when no worker has it free now.
  std::vector<slot_key> set;
  /// For a run with a memory budget: the slots shared by memory that would start it next, in
  /// order, for the memory ledger to judge (a run without a budget never goes to one).
  std::vector<std::string> by_memory;
  /// Whether some other slot it may use is busy now (a queue, or full): it may still get that one
  /// later, so neither a budget that fits none of `by_memory` nor target.wait false refuses it.
  bool busy_others = false;
};
[[nodiscard]] floating_slots free_slots(const floating_run& run, bool has_budget,
                                        const known_workers& workers, const local_devices& local,
                                        const admission& slots);

} // namespace cdui::policy
