#pragma once

#include <string>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "actors/policy/card_ledger.hpp"
#include "actors/server/fwd.hpp"

namespace cdui::actors {

struct device_slot_state {
  /// The card's id in its supervisor ("uuid:<UUID>", else its one slot key).
  std::string card;
  /// The slot keys that share the card, sorted: each key's runs count on this one ledger.
  std::vector<std::string> offerers;
  std::optional<policy::card_ledger> ledger;
  memory_ledger_actor supervisor;
  static inline const char* name = "device_slot";
};

/// One card shared by memory (docs/architecture.md, "Actors": memory_ledger └── device_slot): a
/// thin shell over policy::card_ledger, one for a card however many offerers share it. (share, name,
/// offerers): the keys sharing it changed, and how its texts name it; (report, total, free) from
/// the card's latest figures (any offerer's); (reserve, run, budget) -> memory_verdict: judged, and
/// reserved when it fits; (hold, run): a run without a budget keeps the card; (started, run);
/// (released, run); (status) -> card_memory_status. When room may have grown (a release, a report
/// with more available) it tells its supervisor (memory_freed, card). It ends with its supervisor.
device_slot_actor::behavior_type device_slot(device_slot_actor::stateful_pointer<device_slot_state> self,
                                             std::string card, std::vector<std::string> offerers,
                                             policy::card_ledger::config cfg,
                                             memory_ledger_actor supervisor);

} // namespace cdui::actors
