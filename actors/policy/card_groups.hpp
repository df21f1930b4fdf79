#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "actors/policy/admission.hpp"
#include "actors/policy/placement.hpp"
#include "messages/slot_key.hpp"

namespace cdui::policy {

/// The limit of a worker's slot when it joins: an override for its key
/// (CODEFYUI_RUN_QUEUE_MAX_CONCURRENT); else, for a card this server offers too (same UUID), this
/// server's limit for it (a worker without an override of its own uses it: docs/workers.md,
/// "Cards offered twice"); else the CPU's or an accelerator's default.
[[nodiscard]] int worker_slot_limit(const slot_key& key, const std::string& uuid,
                                    const std::map<std::string, int>& overrides,
                                    const local_devices& local, const admission& slots);

/// The card behind a slot, as the memory ledger keeps one ledger per card: "uuid:<UUID>" for a
/// card with a UUID (every offerer of it says the same one), else the slot key itself (a CPU is
/// never matched, nor is a card whose UUID is unknown).
[[nodiscard]] std::string card_id(const slot_key& key, const std::string& uuid);

/// The shared budget of a one-shot worker's devices, "one-shot:<worker>", and back: the worker of
/// such a group (empty for another group).
[[nodiscard]] std::string one_shot_group(const std::string& worker);
[[nodiscard]] std::string one_shot_worker(const std::string& group);

/// A slot whose own limit its card's shared budget lowers, as the seed asks it be logged.
struct lowered_limit {
  std::string key;
  int own = 0;
  int limit = 0;
  std::string by;    // the offerer's key whose limit it takes
  std::string uuid;  // the card
  /// "<key>: its limit of N runs is lowered to M: <by> offers the same card (<uuid>) with that limit"
  [[nodiscard]] std::string sentence() const;
};

/// The shared budgets (docs/workers.md, "Cards offered twice") as admission groups:
/// - a card that several offerers offer (this server and workers, matched by UUID; a CPU or an
///   empty UUID is never matched) is the group "card:<UUID>" over their keys, its limit the
///   smallest key limit among its online offerers (this server always is; a worker while open),
///   or among all of them when none is online;
/// - a one-shot worker's devices are the group "one-shot:<name>", limit 1 (it executes one run).
/// It remembers which keys it has reported lowered, so each is reported once until it is not.
class card_groups {
public:
  /// Rebuilds every group into `slots` from scratch (every key gets its groups; a key in none gets
  /// an empty list). Returns the keys of `joined` (a worker that just connected or changed; empty:
  /// none) newly lowered by their card's budget.
  std::vector<lowered_limit> regroup(admission& slots, const local_devices& local,
                                     const known_workers& workers, const std::string& joined);

private:
  std::set<std::string> lowered_;
};

} // namespace cdui::policy
