// The model of torch 2.x's CUDA caching allocator that the estimate runs its passes through on a
// CUDA card (runtime/cuda_allocator_model.hpp): block rounding, the two pools and their segments,
// best fit, splitting and merging, each case worked out by hand from the allocator's rules.
#include <boost/test/unit_test.hpp>

#include "runtime/cuda_allocator_model.hpp"

using cdui::runtime::cuda_allocator_model;

namespace {

constexpr std::int64_t kib = 1024;
constexpr std::int64_t mib = 1024 * kib;

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_allocator_model_test)

BOOST_AUTO_TEST_CASE(blocks_are_rounded_to_512_bytes_and_segments_by_size) {
  BOOST_TEST(cuda_allocator_model::block_size(1) == 512);
  BOOST_TEST(cuda_allocator_model::block_size(512) == 512);
  BOOST_TEST(cuda_allocator_model::block_size(513) == 1024);
  BOOST_TEST(cuda_allocator_model::block_size(40) == 512);  // a Linear's bias of 10
  // Up to 1 MiB: the small pool's 2 MiB segments; below 10 MiB a 20 MiB one; past it its own,
  // rounded to 2 MiB.
  BOOST_TEST(cuda_allocator_model::segment_size(512) == 2 * mib);
  BOOST_TEST(cuda_allocator_model::segment_size(mib) == 2 * mib);
  BOOST_TEST(cuda_allocator_model::segment_size(mib + 512) == 20 * mib);
  BOOST_TEST(cuda_allocator_model::segment_size(10 * mib - 512) == 20 * mib);
  BOOST_TEST(cuda_allocator_model::segment_size(10 * mib) == 10 * mib);
  BOOST_TEST(cuda_allocator_model::segment_size(10 * mib + 512) == 12 * mib);
}

BOOST_AUTO_TEST_CASE(small_blocks_share_a_2_mib_segment_until_it_is_full) {
  cuda_allocator_model m;
  BOOST_TEST(m.alloc(0) == cuda_allocator_model::none);
  std::vector<cuda_allocator_model::id> held;
  for (int i = 0; i < 4096; ++i)  // 4096 blocks of 512 bytes: exactly one segment
    held.push_back(m.alloc(100));
  BOOST_TEST(m.segments() == 1);
  BOOST_TEST(m.reserved() == 2 * mib);
  BOOST_TEST(m.allocated() == 2 * mib);
  m.alloc(1);
  BOOST_TEST(m.segments() == 2);
  BOOST_TEST(m.reserved() == 4 * mib);
  // Freed blocks are kept: the reserve stays, and they are used again.
  for (auto b : held)
    m.free(b);
  BOOST_TEST(m.reserved() == 4 * mib);
  BOOST_TEST(m.allocated() == 512);
  m.alloc(mib);  // the first segment merged whole again: a 1 MiB block fits in it
  BOOST_TEST(m.segments() == 2);
  BOOST_TEST(m.reserved_peak() == 4 * mib);
}

BOOST_AUTO_TEST_CASE(a_large_block_below_10_mib_splits_a_20_mib_segment) {
  cuda_allocator_model m;
  auto a = m.alloc(3 * mib);
  BOOST_TEST(m.reserved() == 20 * mib);
  BOOST_TEST(m.allocated() == 3 * mib);
  auto b = m.alloc(8 * mib);  // the 17 MiB left holds it
  BOOST_TEST(m.reserved() == 20 * mib);
  // 9 MiB left: a 9 MiB request takes it whole. The 1.5 MiB after that needs a segment of its own.
  auto c = m.alloc(9 * mib);
  BOOST_TEST(m.reserved() == 20 * mib);
  m.alloc(mib + mib / 2);
  BOOST_TEST(m.reserved() == 40 * mib);
  // a and b freed merge into one free 11 MiB block, the smallest that holds a 10.5 MiB request:
  // it takes it whole (the 0.5 MiB left is not split off).
  m.free(a);
  m.free(b);
  m.alloc(10 * mib + 512 * kib);
  BOOST_TEST(m.reserved() == 40 * mib);
  m.free(c);
  BOOST_TEST(m.allocated() == 11 * mib + mib + mib / 2);
}

BOOST_AUTO_TEST_CASE(a_remainder_of_1_mib_or_less_in_the_large_pool_stays_with_the_block) {
  cuda_allocator_model m;
  auto big = m.alloc(12 * mib);  // a 12 MiB segment of its own
  m.free(big);
  // 11 MiB + 512 fits the free 12 MiB block; the 1 MiB - 512 left is not split off.
  m.alloc(11 * mib + 512);
  BOOST_TEST(m.allocated() == 12 * mib);
  BOOST_TEST(m.reserved() == 12 * mib);
  // In the small pool 512 bytes left are split off and used by the next request.
  cuda_allocator_model s;
  s.alloc(mib);
  s.alloc(mib - 512);
  BOOST_TEST(s.allocated() == 2 * mib - 512);
  s.alloc(100);
  BOOST_TEST(s.reserved() == 2 * mib);
  BOOST_TEST(s.allocated() == 2 * mib);
}

BOOST_AUTO_TEST_CASE(the_smallest_free_block_that_holds_a_request_is_taken) {
  cuda_allocator_model m;
  // Three 12, 14 and 16 MiB segments, freed: a 13 MiB request takes the 14 MiB one, unsplit
  // (1 MiB left), so a 15 MiB one then takes the 16 MiB one, and a second 13 MiB needs a new one.
  auto a = m.alloc(12 * mib), b = m.alloc(14 * mib), c = m.alloc(16 * mib);
  m.free(a);
  m.free(b);
  m.free(c);
  m.alloc(13 * mib);
  m.alloc(15 * mib);
  BOOST_TEST(m.segments() == 3);
  BOOST_TEST(m.allocated() == 30 * mib);
  m.alloc(13 * mib);
  BOOST_TEST(m.segments() == 4);
  BOOST_TEST(m.reserved() == 56 * mib);
}

BOOST_AUTO_TEST_CASE(fragments_cost_segments_that_a_count_of_bytes_does_not_see) {
  cuda_allocator_model m;
  // Ten 5 MiB activations fill two and a half 20 MiB segments; every other one is freed and a
  // persistent 5 MiB tensor is kept between: then 6 MiB requests fit in none of the 5 MiB holes.
  std::vector<cuda_allocator_model::id> acts;
  for (int i = 0; i < 10; ++i)
    acts.push_back(m.alloc(5 * mib));
  BOOST_TEST(m.reserved() == 60 * mib);
  for (int i = 0; i < 10; i += 2)
    m.free(acts[static_cast<std::size_t>(i)]);
  BOOST_TEST(m.allocated() == 25 * mib);  // 35 MiB free, none of it in one piece over 5 MiB but the tail
  m.alloc(6 * mib);                         // the third segment's free tail of 10 MiB holds one
  m.alloc(6 * mib);
  BOOST_TEST(m.reserved() == 80 * mib);
  BOOST_TEST(m.reserved_peak() == 80 * mib);
}

BOOST_AUTO_TEST_SUITE_END()
