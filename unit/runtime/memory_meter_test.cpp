// What a TrainingLoop reports of its card's memory: the counting allocator's scope on the host, the
// CUDA caching allocator's statistics on a card (here through a fake source: no GPU runs here).
#include <boost/test/unit_test.hpp>

#include <ATen/ATen.h>

#include "devices/memory.hpp"
#include "runtime/memory_meter.hpp"
#include "torch_compat/cuda.hpp"

using namespace cdui;
using namespace cdui::runtime;

namespace {

using figures = std::vector<std::pair<std::string, std::int64_t>>;
constexpr std::int64_t mib = 1 << 20;

} // namespace

BOOST_AUTO_TEST_SUITE(memory_meter_test)

BOOST_AUTO_TEST_CASE(on_the_host_the_peak_is_the_scopes) {
  devices::install_counting_allocator();
  auto scope = std::make_shared<devices::memory_scope>("cpu", 0);
  auto meter = scope_meter(*scope);
  {
    devices::memory_scope_guard guard{scope};
    auto a = at::empty({1024}, at::kFloat);
    { auto b = at::empty({2048}, at::kFloat); }
    auto now = meter->read();
    BOOST_TEST(now.live == 4 * 1024);
    BOOST_TEST(now.peak == 12 * 1024);
    BOOST_TEST(!now.allocated_peak.has_value());
  }
  BOOST_TEST((memory_figures(meter->read(), 3000) == figures{{"peak_memory_bytes", 12 * 1024}, {"activation_bytes", 3000}}));
}

BOOST_AUTO_TEST_CASE(on_a_cuda_card_the_peak_is_what_the_caching_allocator_reserved_with_allocated_beside_it) {
  // The caching allocator's figures as a training step moves them: tensors freed, their blocks kept.
  torch_compat::cuda_memory_figures now{300 * mib, 900 * mib, 1024 * mib, 1280 * mib, 80LL << 30};
  std::vector<int> asked;
  auto meter = cuda_meter(2, [&](int card) -> std::optional<torch_compat::cuda_memory_figures> {
    asked.push_back(card);
    return now;
  });
  BOOST_REQUIRE(meter != nullptr);
  auto reading = meter->read();
  BOOST_TEST(reading.live == 300 * mib);   // what tensors hold: the activation measure's base
  BOOST_TEST(reading.peak == 1280 * mib);  // what the card lost to the run at most
  BOOST_TEST(*reading.allocated_peak == 900 * mib);
  BOOST_TEST((asked == std::vector<int>{2, 2}));  // the meter's card, each time
  BOOST_TEST((memory_figures(reading, 64 * mib)
              == figures{{"peak_memory_bytes", 1280 * mib}, {"activation_bytes", 64 * mib},
                         {"peak_allocated_bytes", 900 * mib}}));
  // Figures read later are the allocator's then.
  now.reserved_peak = 2048 * mib;
  BOOST_TEST(meter->read().peak == 2048 * mib);
}

BOOST_AUTO_TEST_CASE(a_card_without_figures_has_no_meter) {
  BOOST_TEST(!cuda_meter(0, [](int) { return std::optional<torch_compat::cuda_memory_figures>{}; }));
  // This machine has no GPU: the real source has no figures for a card it does not have, in
  // either torch configuration (with CUDA, no device; without, nothing at all).
  if (!torch_compat::has_cuda())
    BOOST_TEST(!cuda_meter(0));
}

BOOST_AUTO_TEST_SUITE_END()
