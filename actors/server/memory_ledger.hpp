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

#include "actors/policy/card_ledger.hpp"
#include "actors/server/fwd.hpp"

namespace cdui::actors {

/// A card's total and free bytes now, as this server measures its own cards; nullopt: unknown.
using card_probe = std::function<std::optional<std::pair<std::int64_t, std::int64_t>>(const std::string& key)>;

/// How many times the ledger replaces one card's slot that ends unexpectedly.
inline constexpr int max_slot_replacements = 3;

struct memory_ledger_config {
  /// Measures this server's own shared cards (a worker's come with its heartbeats).
  card_probe probe;
  /// How often this server's shared cards are measured.
  std::chrono::milliseconds probe_interval{500};
};

/// A slot key shared by memory: its card's id and the card's slot.
struct shared_key {
  std::string card;
  device_slot_actor slot;
};

/// A run with a place on cards shared by memory: the cards (ids), its budget on each (0: it holds
/// them without one), and whether it has started.
struct run_place {
  std::vector<std::string> cards;
  std::int64_t budget = 0;
  bool started = false;
};

struct memory_ledger_state {
  memory_ledger_config cfg;
  run_queue_actor queue;
  /// The cards shared by memory, by card id ("uuid:<UUID>", else the slot key of its offerer).
  std::map<std::string, device_slot_actor> slots;
  /// Each slot key shared by memory, and its card: asks, reports and the queue name slot keys.
  std::map<std::string, shared_key> cards;
  /// Each card's offerers that share it: slot key -> the card as that key's sentences name it.
  std::map<std::string, std::map<std::string, std::string>> offerers;
  /// Each card's slot settings, to replace a slot that ends unexpectedly.
  std::map<std::string, policy::card_ledger::config> configs;
  /// Each granted (or holding) run's place: what a replaced slot takes over.
  std::map<std::string, run_place> runs;
  /// How many times each card's slot was replaced.
  std::map<std::string, int> replacements;
  static inline const char* name = "memory_ledger";
};

/// The memory ledger (docs/architecture.md, "Actors"; docs/http-api.md, "Cards shared by memory"):
/// the supervisor of one device_slot actor per card shared by memory (device_slot.hpp), which the
/// run queue asks before a run starts on such a card. A card that several offerers offer (the same
/// UUID: two agents on one GPU server, or this server and a same-host agent) keeps one slot, so the
/// runs through every offerer count on one ledger. Protocol: memory_ledger_actor in fwd.hpp.
/// - (share, card_share{key, card, name, context bytes and name, holders, budgets, shared}) -> bool: slot key `key`
///   (of card id `card`: "uuid:<UUID>", else the key) turns Shared (the card's slot is spawned, or
///   the key joins the slot of a card another key shares already; the runs in `holders` are on it
///   already: each counts its budget as running, and one without a budget (0) keeps the card until
///   it ends) or back to Exclusive (the slot quits once no key of its card is shared; until then
///   the key's runs still count on it); false when that changes nothing.
/// - (ask, memory_ask{run, budget, keys, any_of, has_wait, wait}) -> memory_answer: the run's budget judged on
///   its cards (policy::decide): granted (reserved on the cards named), wait or refuse, with the
///   reason. A card reserves atomically, so asks for single cards go on side by side; a device
///   set's cards are judged first, with no other ask judged meanwhile.
/// - (started, run): a granted run started; (released, run): it ended, or will not start.
/// - (report, key, total, free): a card's figures (a worker's heartbeat); (tick): this server's
///   own cards are measured with the probe.
/// - (context, card, bytes, name): a run measured the card's CUDA context: each run there counts it
///   from now on, named so in texts.
/// - (memory_freed, card) from a slot: passed on to the queue once per key sharing the card, which
///   asks again for the runs that wait there.
/// - (status) -> memory_ledger_status, each slot's card_memory_status.
/// - (get, key) -> device_slot_actor: the slot of a shared key, invalid for another (introspection,
///   tests).
/// It supervises its slots: one that ends but by an unshare is replaced at once by a new slot for
/// the card (at most max_slot_replacements times), which takes over the running runs there (a run
/// granted but not started is adopted when it starts) and is given the card's figures at the next
/// measure or heartbeat.
memory_ledger_actor::behavior_type memory_ledger(memory_ledger_actor::stateful_pointer<memory_ledger_state> self,
                                                 memory_ledger_config cfg);

} // namespace cdui::actors
