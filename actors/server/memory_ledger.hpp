#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "actors/server/fwd.hpp"

namespace cdui::actors {

/// A card's total and free bytes now, as this server measures its own cards; nullopt: unknown.
using card_probe = std::function<std::optional<std::pair<std::int64_t, std::int64_t>>(const std::string& key)>;

struct memory_ledger_config {
  /// Measures this server's own shared cards (a worker's come with its heartbeats).
  card_probe probe;
  /// How often this server's shared cards are measured.
  std::chrono::milliseconds probe_interval{500};
};

struct memory_ledger_state {
  memory_ledger_config cfg;
  run_queue_actor queue;
  /// The cards shared by memory, by slot key.
  std::map<std::string, device_slot_actor> slots;
  /// The cards each granted (or holding) run has a place on.
  std::map<std::string, std::vector<std::string>> runs;
  static inline const char* name = "memory_ledger";
};

/// The memory ledger (DESIGN.md, "Actors"; seed 001, "Sharing a card"): the supervisor of one
/// device_slot actor per card shared by memory (device_slot.hpp), which the run queue asks before
/// a run starts on such a card. Protocol: memory_ledger_actor in fwd.hpp.
/// - (share, key, name, context bytes, holders, budgets, shared) -> bool: a card turns Shared (a
///   device slot is spawned for it; the runs in `holders` are on it already: each counts its budget
///   as running, and one without a budget (0) keeps the card until it ends) or back to Exclusive
///   (its slot quits); false when that changes nothing.
/// - (ask, run, budget, keys, any_of, has_wait, wait) -> memory_answer: the run's budget judged on
///   its cards (policy::decide): granted (reserved on the cards named), wait or refuse, with the
///   reason. A card reserves atomically, so asks for single cards go on side by side; a device
///   set's cards are judged first, with no other ask judged meanwhile.
/// - (started, run): a granted run started; (released, run): it ended, or will not start.
/// - (report, key, total, free): a card's figures (a worker's heartbeat); (tick): this server's
///   own cards are measured with the probe.
/// - (memory_freed, key) from a slot: passed on to the queue, which asks again for the runs that
///   wait there.
/// - (status) -> memory_ledger_status, each slot's card_memory_status.
memory_ledger_actor::behavior_type memory_ledger(memory_ledger_actor::stateful_pointer<memory_ledger_state> self,
                                                 memory_ledger_config cfg);

} // namespace cdui::actors
