#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace cdui::sim {

/// The runs for any worker that wait, by submit order (`seq`, the job's index), as the simulator's
/// index of policy::run_table's floating runs (docs/benchmarks.md, "How the simulator drives the
/// policy"): single-card runs by the room they need (0: a free card by count), found as "the
/// oldest that needs at most `room`" in O(log runs); runs whose budget no card can ever hold; and
/// device sets, by the set they name.
class floating_runs {
public:
  /// `capacity`: one more than the largest seq.
  explicit floating_runs(std::size_t capacity);

  void add_single(std::size_t seq, std::int64_t need);
  void add_oversized(std::size_t seq);
  /// A device set, its devices' places on a worker a bit each.
  void add_set(std::size_t seq, std::uint64_t positions);
  /// Takes the run out, whichever kind it is.
  void remove(std::size_t seq);

  /// The oldest single-card run that needs at most `room`.
  [[nodiscard]] std::optional<std::size_t> oldest_single(std::int64_t room) const;
  [[nodiscard]] std::optional<std::size_t> oldest_oversized() const;
  /// Each device set asked for with its oldest run.
  [[nodiscard]] const std::map<std::uint64_t, std::set<std::size_t>>& sets() const { return sets_; }
  [[nodiscard]] std::size_t size() const { return size_ + oversized_.size() + set_of_.size(); }

private:
  static constexpr std::int64_t absent = std::numeric_limits<std::int64_t>::max();
  std::size_t leaves_ = 1;
  std::vector<std::int64_t> need_;  // a tree of minima over seq
  std::size_t size_ = 0;
  std::set<std::size_t> oversized_;
  std::map<std::uint64_t, std::set<std::size_t>> sets_;
  /// Where each run is: 1 single, 2 oversized, 3 a set (its positions in set_of_).
  std::vector<std::uint8_t> kind_;
  std::map<std::size_t, std::uint64_t> set_of_;
};

} // namespace cdui::sim
