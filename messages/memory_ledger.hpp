#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/fields.hpp"

namespace cdui {

// What the memory ledger and its device slots say (actors/server/memory_ledger.*, device_slot.*).

/// One card's answer for a budget: policy::card_ledger::fit as a number (0 fits and is reserved,
/// 1 waits, 2 never fits, 3 not reported yet) and why it does not fit.
struct memory_verdict {
  int fit = 0;
  std::string reason;
  CDUI_FIELDS(fit, reason)
};

/// A slot key turning Shared by memory or back to Exclusive (share, to the memory ledger): the key,
/// its card's id ("uuid:<UUID>", else the key), how sentences name it, what a run holds there
/// besides its budget (a CUDA context) and how sentences call that (empty: policy::context_name),
/// and the runs already on it with their budgets (0: none).
struct card_share {
  std::string key;
  std::string card;
  std::string name;
  std::int64_t context_bytes = 0;
  std::string context_name;
  std::vector<std::string> holders;
  std::vector<std::int64_t> budgets;
  bool shared = false;
  CDUI_FIELDS(key, card, name, context_bytes, context_name, holders, budgets, shared)
};

/// A run asking the memory ledger for room (ask): `budget` bytes on each card of `keys` (slot
/// keys), on all of them (a device set) or on any one (`any_of`: a run not placed yet), and what a
/// run that does not fit now does: options.target.wait when `has_wait`, else the card's default.
struct memory_ask {
  std::string run_id;
  std::int64_t budget = 0;
  std::vector<std::string> keys;
  bool any_of = false;
  bool has_wait = false;
  bool wait = false;
  CDUI_FIELDS(run_id, budget, keys, any_of, has_wait, wait)
};

/// The ledger's answer for a run: policy::memory_decision::kind as a number (0 grant, 1 wait,
/// 2 refuse), the cards granted (slot keys), and why it waits or is refused.
struct memory_answer {
  int kind = 0;
  std::vector<std::string> cards;
  std::string reason;
  CDUI_FIELDS(kind, cards, reason)
};

/// A run on a card shared by memory.
struct card_run_status {
  std::string id;
  std::int64_t budget = 0;  // 0: it holds the card without a budget
  bool running = false;     // started; else reserved
  CDUI_FIELDS(id, budget, running)
};

/// One card shared by memory, as its device slot keeps it: one for a card however many offerers
/// share it (the same UUID).
struct card_memory_status {
  std::string key;                    // its first offerer's slot key
  std::vector<std::string> offerers;  // the slot keys that share it, sorted (key first)
  std::string name;                   // "sim:0 on this server", "sim:0 on w1 (same card as sim:0 on w2)"
  bool reported = false;
  std::int64_t total = 0;
  std::int64_t free = 0;
  std::int64_t reserved = 0;
  std::int64_t running = 0;
  std::int64_t may_take = 0;  // what a new budget may take, its context taken off
  std::int64_t context = 0;   // each run's context allowance
  std::string context_name;   // "CUDA context", "CUDA context, measured by run a1b2c3d4", "context"
  std::vector<card_run_status> runs;
  CDUI_FIELDS(key, offerers, name, reported, total, free, reserved, running, may_take, context, context_name, runs)
};

/// The memory ledger: every card shared by memory.
struct memory_ledger_status {
  std::uint64_t mailbox = 0;
  std::vector<card_memory_status> cards;
  CDUI_FIELDS(mailbox, cards)
};

} // namespace cdui
