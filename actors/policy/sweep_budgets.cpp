#include "actors/policy/sweep_budgets.hpp"

#include <map>

#include "actors/policy/card_ledger.hpp"
#include "actors/policy/memory_budget.hpp"
#include "messages/slot_key.hpp"

namespace cdui::policy {

namespace {

/// A card's ledger as its status says it is now.
card_ledger ledger_of(const card_memory_status& card) {
  auto device = slot_key::parse(card.key).device;
  card_ledger ledger{{card.name, card.context, context_name(device), budget_refusal(device)}};
  if (card.reported)
    ledger.report(card.total, card.free);
  for (const auto& run : card.runs) {
    if (run.budget == 0) {
      ledger.hold(run.id);
      continue;
    }
    ledger.reserve(run.id, run.budget);
    if (run.running)
      ledger.start(run.id);
  }
  return ledger;
}

} // namespace

std::optional<refused_variant>
first_refused_budget(const std::vector<card_memory_status>& cards, const std::vector<variant_budget>& variants) {
  std::vector<card_ledger> ledgers;
  ledgers.reserve(cards.size());
  std::map<std::string, std::size_t> by_key;  // every offerer's key of a card: its one ledger
  for (const auto& card : cards) {
    ledgers.push_back(ledger_of(card));
    for (const auto& key : card.offerers)
      by_key[key] = ledgers.size() - 1;
    by_key[card.key] = ledgers.size() - 1;
  }
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const auto& v = variants[i];
    std::vector<std::size_t> on;
    for (const auto& key : v.keys)
      if (auto k = by_key.find(key); k != by_key.end())
        on.push_back(k->second);
    if (on.empty())
      continue;
    std::vector<const card_ledger*> judged;
    for (auto l : on)
      judged.push_back(&ledgers[l]);
    if (v.any_of) {
      // Placed when a card of its kind is free: only a budget no card can ever hold is certain now.
      if (v.by_count_too)
        continue;
      auto d = decide(judged, {v.budget, true, true});
      if (d.answer == memory_decision::kind::refuse)
        return refused_variant{i, d.reason};
      continue;
    }
    auto d = decide(judged, {v.budget, v.wait, false});
    if (d.answer == memory_decision::kind::refuse)
      return refused_variant{i, d.reason};
    if (d.answer == memory_decision::kind::grant)
      for (auto l : on)
        ledgers[l].reserve("variant " + std::to_string(i), v.budget);
  }
  return std::nullopt;
}

} // namespace cdui::policy
