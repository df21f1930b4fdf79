// The counting allocator: real libtorch allocations charged to scopes.
#include <boost/test/unit_test.hpp>

#include <thread>

#include <ATen/ATen.h>

#include "devices/memory.hpp"

using namespace cdui::devices;

BOOST_AUTO_TEST_SUITE(memory_test)

BOOST_AUTO_TEST_CASE(a_scope_counts_live_and_peak_bytes_of_tensors_made_under_it) {
  install_counting_allocator();
  auto scope = std::make_shared<memory_scope>("cpu", 0);
  {
    memory_scope_guard guard{scope};
    auto a = at::empty({1024}, at::kFloat);  // 4 KiB
    {
      auto b = at::empty({2048}, at::kFloat);  // 8 KiB
      BOOST_TEST(scope->stats().live == 12 * 1024);
    }
    BOOST_TEST(scope->stats().live == 4 * 1024);
  }
  BOOST_TEST(scope->stats().live == 0);
  BOOST_TEST(scope->stats().peak == 12 * 1024);
  auto outside = at::empty({4096}, at::kFloat);
  BOOST_TEST(scope->stats().live == 0);  // made outside the scope: not charged
}

BOOST_AUTO_TEST_CASE(a_free_on_another_thread_credits_the_scope_that_paid) {
  install_counting_allocator();
  auto scope = std::make_shared<memory_scope>("sim:0", 0);
  at::Tensor t;
  {
    memory_scope_guard guard{scope};
    t = at::empty({256}, at::kDouble);
  }
  BOOST_TEST(scope->stats().live == 2048);
  std::thread([moved = std::move(t)]() mutable { moved.reset(); }).join();
  BOOST_TEST(scope->stats().live == 0);
}

BOOST_AUTO_TEST_CASE(an_allocation_over_the_cap_fails_as_out_of_memory_and_charges_nothing) {
  install_counting_allocator();
  auto scope = std::make_shared<memory_scope>("sim:1", 10 * 1024);
  memory_scope_guard guard{scope};
  auto a = at::empty({2048}, at::kFloat);  // 8 KiB of 10
  try {
    auto b = at::empty({1024}, at::kFloat);
    BOOST_FAIL("the allocation should have failed");
  } catch (const c10::OutOfMemoryError& e) {
    std::string what = e.what();
    BOOST_TEST(what.find("sim:1 out of memory") != std::string::npos, what);
  }
  BOOST_TEST(scope->stats().live == 8 * 1024);
  BOOST_TEST(scope->live_at_failure() == 8 * 1024);
  auto c = at::empty({256}, at::kFloat);  // still fits
  BOOST_TEST(scope->stats().live == 9 * 1024);
}

BOOST_AUTO_TEST_CASE(guards_nest_and_restore_the_outer_scope) {
  install_counting_allocator();
  auto outer = std::make_shared<memory_scope>("cpu", 0);
  auto inner = std::make_shared<memory_scope>("sim:0", 0);
  memory_scope_guard g1{outer};
  {
    memory_scope_guard g2{inner};
    auto t = at::empty({16}, at::kFloat);
    BOOST_TEST(inner->stats().live == 64);
  }
  auto u = at::empty({16}, at::kFloat);
  BOOST_TEST(outer->stats().live == 64);
  BOOST_TEST(inner->stats().peak == 64);
}

BOOST_AUTO_TEST_CASE(bytes_are_formatted_as_people_read_them) {
  BOOST_TEST(format_bytes(12) == "12 B");
  BOOST_TEST(format_bytes(1536) == "1.5 KiB");
  BOOST_TEST(format_bytes(768LL << 20) == "768.0 MiB");
  BOOST_TEST(format_bytes((3LL << 30) / 2) == "1.50 GiB");
}

BOOST_AUTO_TEST_SUITE_END()
