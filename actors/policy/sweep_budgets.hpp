#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "messages/memory_ledger.hpp"

namespace cdui::policy {

/// One variant of a sweep as the memory ledger would judge it: its budget per card and the cards
/// shared by memory it queues for.
struct variant_budget {
  std::int64_t budget = 0;
  /// Its slot keys shared by memory: every one of its device set, or, for a run placed later (any,
  /// the one-shot pool), the shared cards of its kind it may take (any_of).
  std::vector<std::string> keys;
  bool any_of = false;
  /// Placed later, it may take a card by count too (one not shared): no card's size refuses it.
  bool by_count_too = false;
  /// target.wait; unset: the default of its kind (refused for a named card, waits when placed later).
  std::optional<bool> wait;
};

/// The variant the ledger would refuse first, and the ledger's reason.
struct refused_variant {
  std::size_t index = 0;
  std::string reason;
};

/// A sweep's budgets judged before anything is queued (issue 16: refused whole when any child would
/// be), on the cards as the ledger has them now (`cards`: its status). In variant order, as they
/// would reach the front of their cards: a variant for named cards is refused when a card can
/// never hold its budget, or when it does not fit now beside the variants before it that fit
/// (each reserves its budget, as when they all start) and target.wait is not true; one placed
/// later only when its budget is larger than every card it may use. A key the ledger does not
/// list is not judged. nullopt: none is refused.
[[nodiscard]] std::optional<refused_variant>
first_refused_budget(const std::vector<card_memory_status>& cards, const std::vector<variant_budget>& variants);

} // namespace cdui::policy
