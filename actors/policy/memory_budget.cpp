#include "actors/policy/memory_budget.hpp"

#include <cmath>

#include "devices/device.hpp"

namespace cdui::policy {

namespace {

// The decisions' words, which place_later() reads back.
const std::string larger_than_every_card = "its budget is larger than every card it may use: ";
const std::string waits_for_memory = "waits for memory: ";
const std::string no_wait = " (target.wait is false, so it does not wait)";

std::int64_t with_margin(std::int64_t peak) {
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(peak) * measured_margin));
}

std::string measured_note(const measured_peak& peak) {
  return "the peak of run " + peak.run_id + " (" + gib_text(peak.bytes) + ") + 20%";
}

/// The reasons of the cards that gave one, joined; long lists say how many more.
std::string joined(const std::vector<std::string>& reasons) {
  constexpr std::size_t shown = 3;
  std::string out;
  for (std::size_t i = 0; i < reasons.size() && i < shown; ++i)
    out += (i == 0 ? "" : "; ") + reasons[i];
  if (reasons.size() > shown)
    out += "; and " + std::to_string(reasons.size() - shown) + " more card(s)";
  return out;
}

} // namespace

std::string_view to_string(budget_source s) {
  switch (s) {
  case budget_source::typed: return "typed";
  case budget_source::measured: return "measured";
  case budget_source::estimate: return "estimate";
  }
  return "typed";
}

budget_source budget_source_of(std::string_view memory_source) {
  return memory_source == "estimate"   ? budget_source::estimate
         : memory_source == "measured" ? budget_source::measured
                                       : budget_source::typed;
}

std::string sharing_refusal(bool on_this_server, std::string_view device) {
  auto kind = devices::kind_of(device);
  if (on_this_server) {
    if (kind == "cuda")
      return "this server's CUDA cards admit runs by count only: its runs share one process, and "
             "CUDA's allocator cap (set_per_process_memory_fraction) holds a process, not a run, so "
             "nothing could hold a run to its budget; offer the card through an agent on this machine "
             "(cdui agent start) and share it there";
    if (kind == "sim" || kind == "cpu")
      return "";
    return "this server has no device '" + std::string{device} + "' that can be shared";
  }
  if (kind == "cuda" || kind == "sim" || kind == "mps")
    return "";
  return "only a worker's cards (cuda, mps, sim) can be shared by memory, not '" + std::string{device} + "'";
}

std::string budget_refusal(std::string_view device) {
  if (devices::kind_of(device) == "mps")
    return "is an MPS card, which reports no memory total, so it cannot admit a run by budget; set "
           "it back to Exclusive (cdui workers exclusive) to run there by count";
  return "";
}

std::string context_name(std::string_view device) {
  return devices::kind_of(device) == "cuda" ? "CUDA context" : "context";
}

std::variant<run_budget, std::string>
resolve_budget(std::optional<std::int64_t> declared, budget_source declared_source,
               const std::optional<measured_peak>& peak) {
  if (declared) {
    run_budget b{*declared, declared_source, ""};
    if (declared_source == budget_source::estimate && peak)
      if (auto raised = raise_budget(b, *peak))
        return *raised;
    return b;
  }
  if (peak)
    return run_budget{with_margin(peak->bytes), budget_source::measured, measured_note(*peak)};
  return std::string{"the card is shared by memory, so the run needs a budget: no run of this graph "
                     "on as many cards has succeeded yet, so set target.memory_gib (cdui run "
                     "--memory-gib G), or use the static estimate (cdui estimate GRAPH.json) with "
                     "target.memory_source \"estimate\""};
}

std::optional<run_budget> raise_budget(const run_budget& budget, const measured_peak& peak) {
  if (budget.source == budget_source::typed)
    return std::nullopt;
  auto target = with_margin(peak.bytes);
  if (target <= budget.bytes)
    return std::nullopt;
  auto was = std::string{budget.source == budget_source::estimate ? "an estimate" : "a measured budget"};
  return run_budget{target, budget.source,
                    "raised from " + was + " of " + gib_text(budget.bytes) + " to "
                      + measured_note(peak)};
}

memory_decision decide(const std::vector<const card_ledger*>& cards, const memory_request& request) {
  std::vector<card_ledger::verdict> verdicts;
  for (const auto* card : cards) {
    verdicts.push_back(card->judge(request.budget));
    if (request.any_of && verdicts.back().answer == card_ledger::fit::fits)
      break;
  }
  return decide_verdicts(verdicts, request);
}

memory_decision decide_verdicts(const std::vector<card_ledger::verdict>& verdicts,
                                const memory_request& request) {
  using kind = memory_decision::kind;
  if (verdicts.empty())
    return {kind::refuse, {}, "no card the run may use admits runs by memory"};
  std::vector<std::string> waiting;  // does not fit now
  std::vector<std::string> pending;  // not judged yet: no heartbeat gave its memory
  std::vector<std::string> never;
  std::vector<std::size_t> fitting;
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    const auto& v = verdicts[i];
    switch (v.answer) {
    case card_ledger::fit::fits:
      if (request.any_of)
        return {kind::grant, {i}, ""};
      fitting.push_back(i);
      break;
    case card_ledger::fit::waits: waiting.push_back(v.reason); break;
    case card_ledger::fit::pending: pending.push_back(v.reason); break;
    case card_ledger::fit::never: never.push_back(v.reason); break;
    }
  }
  if (request.any_of) {
    if (waiting.empty() && pending.empty())
      return {kind::refuse, {}, larger_than_every_card + joined(never)};
    if (pending.empty() && !request.wait.value_or(true))
      return {kind::refuse, {}, joined(waiting) + no_wait};
    waiting.insert(waiting.end(), pending.begin(), pending.end());
    return {kind::wait, {}, waits_for_memory + joined(waiting)};
  }
  if (!never.empty())
    return {kind::refuse, {}, joined(never)};
  if (!waiting.empty() && !request.wait.value_or(false))
    return {kind::refuse, {}, joined(waiting)
                                + " (with target.wait true it would wait in the queue until it fits)"};
  if (!waiting.empty() || !pending.empty()) {
    waiting.insert(waiting.end(), pending.begin(), pending.end());
    return {kind::wait, {}, waits_for_memory + joined(waiting)};
  }
  return {kind::grant, fitting, ""};
}

memory_decision place_later(memory_decision on_idle, bool busy_others, std::optional<bool> wait) {
  using kind = memory_decision::kind;
  auto after = [](const std::string& text, const std::string& prefix) {
    return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text;
  };
  switch (on_idle.answer) {
  case kind::grant:
    return on_idle;
  case kind::refuse:
    if (!busy_others)
      return on_idle;
    return {kind::wait, {}, "waits for a card that is busy now: the free ones are too small ("
                              + after(on_idle.reason, larger_than_every_card) + ")"};
  case kind::wait:
    if (wait.value_or(true) || busy_others)
      return on_idle;
    return {kind::refuse, {}, after(on_idle.reason, waits_for_memory) + no_wait};
  }
  return on_idle;
}

} // namespace cdui::policy
