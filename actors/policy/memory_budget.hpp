#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "actors/policy/card_ledger.hpp"
#include "messages/memory_ledger.hpp"

namespace cdui::policy {

/// Where a run's memory budget came from (docs/http-api.md, "Cards shared by memory").
enum class budget_source {
  typed,     // target.memory_gib as the user gave it: never changed
  measured,  // the peak of the last succeeded run of the same graph on as many cards, plus 20%
  estimate,  // target.memory_gib from the static estimate (target.memory_source "estimate")
};

[[nodiscard]] std::string_view to_string(budget_source s);
/// The source target.memory_source names ("estimate", "measured"; anything else, "" included:
/// typed).
[[nodiscard]] budget_source budget_source_of(std::string_view memory_source);

/// The margin a measured peak gets: the default budget is the peak plus 20%.
inline constexpr double measured_margin = 1.2;

/// The peak of the last succeeded run of a graph (its memory key) on a number of cards.
struct measured_peak {
  std::int64_t bytes = 0;
  std::string run_id;
};

/// A run's budget per card, where it came from, and a sentence saying so when it was not typed as
/// it is (the Budget column and the run object show it).
struct run_budget {
  std::int64_t bytes = 0;
  budget_source source = budget_source::typed;
  std::string note;
};

/// The budget of a run for a shared card: the declared one (typed, or an estimate, which a larger
/// measured peak replaces with that peak + 20%), else the measured default; with neither, the
/// refusal that asks for one.
[[nodiscard]] std::variant<run_budget, std::string>
resolve_budget(std::optional<std::int64_t> declared, budget_source declared_source,
               const std::optional<measured_peak>& peak);

/// A waiting run's budget once a run of the same graph on as many cards succeeded with `peak`:
/// a measured or estimated budget smaller than the peak + 20% is raised to it, with the reason;
/// a typed one never changes. nullopt: unchanged.
[[nodiscard]] std::optional<run_budget> raise_budget(const run_budget& budget, const measured_peak& peak);

/// Why `device` may not be set Shared by memory, empty when it may: a worker's CUDA, MPS and sim
/// cards, and this server's sim cards and CPU, whose runs' allocator scopes are capped in-process;
/// not this server's CUDA cards, nor a worker's CPU (docs/http-api.md, "Cards shared by memory").
[[nodiscard]] std::string sharing_refusal(bool on_this_server, std::string_view device);

/// Why a card set Shared by memory still cannot admit a run by its budget, to end a sentence that
/// starts with the card's name; empty when it can. An MPS card: it reports no memory
/// total, so the server refuses its budgeted runs until it is set back to Exclusive.
[[nodiscard]] std::string budget_refusal(std::string_view device);

/// What each run on a card holds besides its budget is called in sentences: "CUDA context" on a CUDA
/// card, "context" elsewhere.
[[nodiscard]] std::string context_name(std::string_view device);

/// A card shared by memory admits by budget; this many runs by count at most.
inline constexpr int shared_slot_limit = 64;

/// How a run with a budget is judged on the cards it may use.
struct memory_request {
  std::int64_t budget = 0;
  /// target.wait: whether it waits when it does not fit now. Unset: a run for a named worker is
  /// refused at once, a run placed later (any, the one-shot pool) waits.
  std::optional<bool> wait;
  /// Placed later: any one of the cards will do. Else it needs every one (its device set).
  bool any_of = false;
};

/// The request an ask carries (memory_ask, a message: target.wait only when given).
[[nodiscard]] inline memory_request request_of(const memory_ask& ask) {
  return {ask.budget, ask.has_wait ? std::optional<bool>{ask.wait} : std::nullopt, ask.any_of};
}

/// The ledger's answer for a run: grant (the cards it takes, by index into the candidates), wait
/// or refuse, each but grant with its reason.
struct memory_decision {
  enum class kind { grant, wait, refuse };
  kind answer = kind::grant;
  std::vector<std::size_t> cards;
  std::string reason;
};

/// Judges a run on its candidate cards (docs/http-api.md, "Cards shared by memory"): a run for a
/// named worker (every card of its device set) is granted when each fits, refused when one never
/// can, and otherwise refused at once unless target.wait is true; a run placed later takes the
/// first card that fits, is refused when its budget is larger than every candidate card or
/// target.wait is false, and else waits.
[[nodiscard]] memory_decision decide(const std::vector<const card_ledger*>& cards,
                                     const memory_request& request);
/// The same from each card's verdict, in the candidates' order; for a run placed later the
/// verdicts may stop at the first that fits.
[[nodiscard]] memory_decision decide_verdicts(const std::vector<card_ledger::verdict>& verdicts,
                                     const memory_request& request);

/// A run placed later (any, the pool) is judged by the ledger only on the shared cards where it
/// would be next (free_slots(): it never passes a run queued at a card), as a run that may wait.
/// This finishes the decision from that answer (`on_idle`): granted stays granted; a budget larger
/// than each of those cards, or one that does not fit now while target.wait is false, waits when
/// another card it may use is busy now (`busy_others`: it may get that one later) and is refused
/// otherwise; else it waits for memory.
[[nodiscard]] memory_decision place_later(memory_decision on_idle, bool busy_others,
                                          std::optional<bool> wait);

} // namespace cdui::policy
