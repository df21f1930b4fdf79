#include "runtime/cuda_allocator_model.hpp"

#include <algorithm>

namespace cdui::runtime {

namespace {

std::int64_t round_up(std::int64_t n, std::int64_t to) {
  return (n + to - 1) / to * to;
}

} // namespace

std::int64_t cuda_allocator_model::block_size(std::int64_t bytes) {
  return bytes < cuda_min_block ? cuda_min_block : round_up(bytes, cuda_min_block);
}

std::int64_t cuda_allocator_model::segment_size(std::int64_t size) {
  if (size <= cuda_small_size)
    return cuda_small_segment;
  if (size < cuda_min_large_alloc)
    return cuda_large_segment;
  return round_up(size, cuda_round_large);
}

void cuda_allocator_model::insert_free(id b) {
  auto& k = blocks_[static_cast<std::size_t>(b)];
  k.free = true;
  pool_of(k.small).emplace(k.size, k.address, b);
}

void cuda_allocator_model::erase_free(id b) {
  auto& k = blocks_[static_cast<std::size_t>(b)];
  k.free = false;
  pool_of(k.small).erase({k.size, k.address, b});
}

cuda_allocator_model::id cuda_allocator_model::alloc(std::int64_t bytes) {
  if (bytes <= 0)
    return none;
  auto size = block_size(bytes);
  bool small = size <= cuda_small_size;
  auto& pool = pool_of(small);
  id b = none;
  if (auto fit = pool.lower_bound({size, -1, none}); fit != pool.end()) {
    b = std::get<2>(*fit);
    erase_free(b);
  } else {
    auto segment = segment_size(size);
    blocks_.push_back({next_address_, segment, small, false, none, none});
    b = static_cast<id>(blocks_.size() - 1);
    next_address_ += segment;
    reserved_ += segment;
    reserved_peak_ = std::max(reserved_peak_, reserved_);
    ++segments_;
  }
  auto& k = blocks_[static_cast<std::size_t>(b)];
  auto left = k.size - size;
  if (small ? left >= cuda_min_block : left > cuda_small_size) {
    // The block keeps the front; what is left stays free behind it.
    block rest{k.address + size, left, small, false, b, k.next};
    k.size = size;
    blocks_.push_back(rest);
    auto r = static_cast<id>(blocks_.size() - 1);
    auto& kept = blocks_[static_cast<std::size_t>(b)];
    if (kept.next != none)
      blocks_[static_cast<std::size_t>(kept.next)].prev = r;
    kept.next = r;
    insert_free(r);
  }
  allocated_ += blocks_[static_cast<std::size_t>(b)].size;
  allocated_peak_ = std::max(allocated_peak_, allocated_);
  return b;
}

void cuda_allocator_model::free(id b) {
  if (b == none)
    return;
  allocated_ -= blocks_[static_cast<std::size_t>(b)].size;
  // Merged with a free neighbour, the neighbour's entry goes: the block takes its place.
  auto merge = [&](id into, id gone) {
    auto& a = blocks_[static_cast<std::size_t>(into)];
    const auto& g = blocks_[static_cast<std::size_t>(gone)];
    a.size += g.size;
    a.next = g.next;
    if (g.next != none)
      blocks_[static_cast<std::size_t>(g.next)].prev = into;
  };
  auto next = blocks_[static_cast<std::size_t>(b)].next;
  if (next != none && blocks_[static_cast<std::size_t>(next)].free) {
    erase_free(next);
    merge(b, next);
  }
  auto prev = blocks_[static_cast<std::size_t>(b)].prev;
  if (prev != none && blocks_[static_cast<std::size_t>(prev)].free) {
    erase_free(prev);
    merge(prev, b);
    b = prev;
  }
  insert_free(b);
}

} // namespace cdui::runtime
