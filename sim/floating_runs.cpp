#include "sim/floating_runs.hpp"

#include <algorithm>

namespace cdui::sim {

namespace {
enum : std::uint8_t { none, single, oversized, in_set };
}

floating_runs::floating_runs(std::size_t capacity) {
  while (leaves_ < capacity)
    leaves_ *= 2;
  need_.assign(2 * leaves_, absent);
  kind_.assign(capacity, none);
}

void floating_runs::add_single(std::size_t seq, std::int64_t need) {
  auto at = leaves_ + seq;
  need_[at] = need;
  for (at /= 2; at >= 1; at /= 2)
    need_[at] = std::min(need_[2 * at], need_[2 * at + 1]);
  kind_[seq] = single;
  ++size_;
}

void floating_runs::add_oversized(std::size_t seq) {
  oversized_.insert(seq);
  kind_[seq] = oversized;
}

void floating_runs::add_set(std::size_t seq, std::uint64_t positions) {
  sets_[positions].insert(seq);
  set_of_[seq] = positions;
  kind_[seq] = in_set;
}

void floating_runs::remove(std::size_t seq) {
  switch (kind_[seq]) {
  case single: {
    auto at = leaves_ + seq;
    need_[at] = absent;
    for (at /= 2; at >= 1; at /= 2)
      need_[at] = std::min(need_[2 * at], need_[2 * at + 1]);
    --size_;
    break;
  }
  case oversized:
    oversized_.erase(seq);
    break;
  case in_set: {
    auto positions = set_of_.at(seq);
    sets_[positions].erase(seq);
    set_of_.erase(seq);
    break;
  }
  default:
    return;
  }
  kind_[seq] = none;
}

std::optional<std::size_t> floating_runs::oldest_single(std::int64_t room) const {
  if (need_[1] == absent || need_[1] > room)
    return std::nullopt;
  std::size_t at = 1;
  while (at < leaves_)
    at = need_[2 * at] != absent && need_[2 * at] <= room ? 2 * at : 2 * at + 1;
  return at - leaves_;
}

std::optional<std::size_t> floating_runs::oldest_oversized() const {
  if (oversized_.empty())
    return std::nullopt;
  return *oversized_.begin();
}


} // namespace cdui::sim
