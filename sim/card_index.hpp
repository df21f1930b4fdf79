#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace cdui::sim {

/// What the simulator knows of each card between two admission decisions, in candidate order, so
/// that it hands policy::free_slots and the ledger only the worker where the first fitting card is
/// instead of all of them (docs/benchmarks.md, "How the simulator drives the policy"): per card,
/// -1 when it is not idle (admission::idle), else the budget it may take now (card_ledger::may_take)
/// or `by_count` on a card not shared by memory. A tree of maxima answers "the first card with
/// room for `need`" in O(log cards); each worker's cards free by count answer "the first worker
/// with this device set free" for runs for any worker with a device set.
class card_index {
public:
  static constexpr std::int64_t not_idle = -1;
  static constexpr std::int64_t by_count = std::numeric_limits<std::int64_t>::max();

  /// `worker_of[i]` and `position_of[i]`: card i's worker and its place among that worker's cards.
  card_index(std::vector<std::size_t> worker_of, std::vector<int> position_of);

  void set(std::size_t card, std::int64_t room);
  [[nodiscard]] std::int64_t room(std::size_t card) const { return tree_[leaves_ + card]; }
  /// The first card, in candidate order, with room of at least `need`.
  [[nodiscard]] std::optional<std::size_t> first_with(std::int64_t need) const;
  /// The most room any card has (not_idle when none is idle).
  [[nodiscard]] std::int64_t most() const { return tree_[1]; }
  /// How many cards are not idle now.
  [[nodiscard]] std::size_t busy() const { return busy_; }

  /// The first worker, by name, whose cards at `positions` (a bit each) are all free by count.
  [[nodiscard]] std::optional<std::size_t> first_worker_with(std::uint64_t positions);

private:
  std::size_t leaves_ = 1;
  std::vector<std::int64_t> tree_;
  std::size_t busy_ = 0;
  std::vector<std::size_t> worker_of_;
  std::vector<int> position_of_;
  /// Per worker, its cards free by count (a bit each); per device set asked for, the workers
  /// that have it whole.
  std::vector<std::uint64_t> free_by_count_;
  std::map<std::uint64_t, std::set<std::size_t>> whole_sets_;
};

} // namespace cdui::sim
