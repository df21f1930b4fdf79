#include "sim/card_index.hpp"

#include <algorithm>

namespace cdui::sim {

card_index::card_index(std::vector<std::size_t> worker_of, std::vector<int> position_of)
    : worker_of_(std::move(worker_of)), position_of_(std::move(position_of)) {
  while (leaves_ < worker_of_.size())
    leaves_ *= 2;
  tree_.assign(2 * leaves_, not_idle);
  busy_ = worker_of_.size();
  std::size_t workers = worker_of_.empty() ? 0 : *std::max_element(worker_of_.begin(), worker_of_.end()) + 1;
  free_by_count_.assign(workers, 0);
}

void card_index::set(std::size_t card, std::int64_t room) {
  auto at = leaves_ + card;
  auto was = tree_[at];
  if (was == room)
    return;
  busy_ += (room == not_idle) - (was == not_idle);
  tree_[at] = room;
  for (at /= 2; at >= 1; at /= 2)
    tree_[at] = std::max(tree_[2 * at], tree_[2 * at + 1]);
  if ((was == by_count) == (room == by_count))
    return;
  auto w = worker_of_[card];
  auto bit = std::uint64_t{1} << position_of_[card];
  if (room == by_count)
    free_by_count_[w] |= bit;
  else
    free_by_count_[w] &= ~bit;
  for (auto& [positions, workers] : whole_sets_) {
    if ((positions & bit) == 0)
      continue;
    if ((free_by_count_[w] & positions) == positions)
      workers.insert(w);
    else
      workers.erase(w);
  }
}

std::optional<std::size_t> card_index::first_with(std::int64_t need) const {
  if (tree_[1] < need)
    return std::nullopt;
  std::size_t at = 1;
  while (at < leaves_)
    at = tree_[2 * at] >= need ? 2 * at : 2 * at + 1;
  return at - leaves_;
}

std::optional<std::size_t> card_index::first_worker_with(std::uint64_t positions) {
  auto shape = whole_sets_.find(positions);
  if (shape == whole_sets_.end()) {
    // First asked for: every worker that has it whole now; set() keeps it from then on.
    std::set<std::size_t> workers;
    for (std::size_t w = 0; w < free_by_count_.size(); ++w)
      if ((free_by_count_[w] & positions) == positions)
        workers.insert(w);
    shape = whole_sets_.emplace(positions, std::move(workers)).first;
  }
  if (shape->second.empty())
    return std::nullopt;
  return *shape->second.begin();
}

} // namespace cdui::sim
