#pragma once
// What torch 2.x's CUDA caching allocator takes from a card for a sequence of allocations and
// frees, for the static estimate on CUDA (docs/training-memory.md, "The CUDA terms"): a model of
// its native allocator with its defaults, on one stream (no max_split_size, no expandable
// segments, no power-of-two rounding). Its constants are c10/core/AllocatorConfig.h's. Torch-free.

#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

namespace cdui::runtime {

/// Every block is a multiple of this (a smaller request gets this much).
inline constexpr std::int64_t cuda_min_block = 512;
/// Blocks up to this come from the small pool, packed into segments of cuda_small_segment.
inline constexpr std::int64_t cuda_small_size = std::int64_t{1} << 20;
inline constexpr std::int64_t cuda_small_segment = std::int64_t{2} << 20;
/// Below this a large block gets a segment of cuda_large_segment (split for the next ones); from
/// it on, a segment of its own, rounded up to cuda_round_large.
inline constexpr std::int64_t cuda_min_large_alloc = std::int64_t{10} << 20;
inline constexpr std::int64_t cuda_large_segment = std::int64_t{20} << 20;
inline constexpr std::int64_t cuda_round_large = std::int64_t{2} << 20;

/// The caching allocator's state: the segments it took from the card (cudaMalloc) and the blocks
/// they are split into. A request takes the smallest free block of its pool that holds it (the
/// lowest address among equals), split when what is left is worth keeping (in the small pool 512
/// bytes, in the large one more than 1 MiB); else a new segment. A freed block merges with the free
/// blocks beside it in its segment. Segments are never given back (as torch, until emptyCache).
class cuda_allocator_model {
public:
  using id = int;
  static constexpr id none = -1;

  /// The block size a request of `bytes` gets (round_size).
  [[nodiscard]] static std::int64_t block_size(std::int64_t bytes);
  /// The segment a block of `size` gets when no free block holds it (get_allocation_size).
  [[nodiscard]] static std::int64_t segment_size(std::int64_t size);

  /// Allocates `bytes` (none for 0 bytes: torch allocates nothing).
  id alloc(std::int64_t bytes);
  /// Frees a block alloc() gave (none: nothing).
  void free(id block);

  /// What the segments hold: what the card lost.
  [[nodiscard]] std::int64_t reserved() const { return reserved_; }
  [[nodiscard]] std::int64_t reserved_peak() const { return reserved_peak_; }
  /// What the allocated blocks hold (each block whole, rounded, unsplit remainders included).
  [[nodiscard]] std::int64_t allocated() const { return allocated_; }
  [[nodiscard]] std::int64_t allocated_peak() const { return allocated_peak_; }
  [[nodiscard]] std::int64_t segments() const { return segments_; }

private:
  struct block {
    std::int64_t address = 0;
    std::int64_t size = 0;
    bool small = false;
    bool free = false;
    id prev = none;  // the blocks beside it in its segment
    id next = none;
  };
  using pool = std::set<std::tuple<std::int64_t, std::int64_t, id>>;  // size, address, block

  [[nodiscard]] pool& pool_of(bool small) { return small ? small_pool_ : large_pool_; }
  void insert_free(id b);
  void erase_free(id b);

  std::vector<block> blocks_;
  pool small_pool_, large_pool_;
  std::int64_t next_address_ = 0;
  std::int64_t reserved_ = 0, reserved_peak_ = 0;
  std::int64_t allocated_ = 0, allocated_peak_ = 0;
  std::int64_t segments_ = 0;
};

} // namespace cdui::runtime
