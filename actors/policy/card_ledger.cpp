#include "actors/policy/card_ledger.hpp"

#include <algorithm>
#include <cstdio>

#include "messages/run_request.hpp"

namespace cdui::policy {

std::string gib_text(std::int64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / bytes_per_gib);
  return buf;
}

std::string card_name(const std::vector<std::string>& offerer_names) {
  if (offerer_names.empty())
    return "";
  auto out = offerer_names.front();
  for (std::size_t i = 1; i < offerer_names.size(); ++i)
    out += (i == 1 ? " (same card as " : ", ") + offerer_names[i];
  return offerer_names.size() > 1 ? out + ")" : out;
}

void card_ledger::report(std::int64_t total, std::int64_t free) {
  total_ = std::max<std::int64_t>(total, 0);
  free_ = std::clamp<std::int64_t>(free, 0, total_);
  reported_ = true;
}

std::string card_ledger::needs(std::int64_t budget) const {
  auto out = "needs " + gib_text(budget);
  if (cfg_.context_bytes > 0)
    out += " (+" + gib_text(cfg_.context_bytes) + " " + cfg_.context_name + ")";
  return out;
}

std::string card_ledger::runs_text() const {
  if (runs_.empty())
    return "";
  std::string out = " (runs ";
  bool first = true;
  for (const auto& [id, run] : runs_) {
    out += (first ? "" : ", ") + id;
    first = false;
  }
  return out + ")";
}

card_ledger::verdict card_ledger::judge(std::int64_t budget) const {
  if (!cfg_.cannot_budget.empty())
    return {fit::never, needs(budget) + ", but " + cfg_.name + " " + cfg_.cannot_budget};
  if (!reported_)
    return {fit::pending, needs(budget) + ", " + cfg_.name
                          + " has not reported its memory yet; the budget is judged at its next heartbeat"};
  auto need = budget + cfg_.context_bytes;
  if (need > total_)
    return {fit::never, needs(budget) + ", more than " + cfg_.name + " has in all ("
                          + gib_text(total_) + ")"};
  for (const auto& [id, run] : runs_)
    if (run.budget == 0)
      return {fit::waits, cfg_.name + " is held by run " + id
                            + ", which has no budget and keeps the card to itself until it ends"};
  if (need > available())
    return {fit::waits, needs(budget) + ", " + cfg_.name + " has " + gib_text(available()) + " free"
                          + runs_text()};
  return {fit::fits, ""};
}

void card_ledger::reserve(const std::string& run_id, std::int64_t budget) {
  runs_[run_id] = {run_id, budget, false};
}

card_ledger::verdict card_ledger::try_reserve(const std::string& run_id, std::int64_t budget) {
  auto v = judge(budget);
  if (v.answer == fit::fits)
    reserve(run_id, budget);
  return v;
}

void card_ledger::start(const std::string& run_id) {
  if (auto i = runs_.find(run_id); i != runs_.end())
    i->second.running = true;
}

void card_ledger::hold(const std::string& run_id) { runs_[run_id] = {run_id, 0, true}; }

bool card_ledger::release(const std::string& run_id) { return runs_.erase(run_id) > 0; }

std::int64_t card_ledger::reserved() const {
  std::int64_t sum = 0;
  for (const auto& [id, run] : runs_)
    if (!run.running)
      sum += run.budget + cfg_.context_bytes;
  return sum;
}

std::int64_t card_ledger::running() const {
  std::int64_t sum = 0;
  for (const auto& [id, run] : runs_)
    if (run.running && run.budget > 0)
      sum += run.budget + cfg_.context_bytes;
  return sum;
}

std::int64_t card_ledger::available() const {
  auto r = reserved();
  return std::max<std::int64_t>(0, std::min(free_ - r, total_ - r - running()));
}

std::int64_t card_ledger::may_take() const {
  return std::max<std::int64_t>(0, available() - cfg_.context_bytes);
}

std::vector<card_ledger::holding> card_ledger::runs() const {
  std::vector<holding> out;
  for (const auto& [id, run] : runs_)
    out.push_back(run);
  return out;
}

} // namespace cdui::policy
