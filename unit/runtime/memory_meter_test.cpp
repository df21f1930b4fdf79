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
  auto meter = cuda_meter(2, {[&](int card) -> std::optional<torch_compat::cuda_memory_figures> {
                                asked.push_back(card);
                                return now;
                              }});
  BOOST_REQUIRE(meter != nullptr);
  auto reading = meter->read();
  BOOST_TEST(reading.live == 300 * mib);   // what tensors hold: the activation measure's base
  BOOST_TEST(reading.peak == 1280 * mib);  // what the card lost to the run at most
  BOOST_TEST(*reading.allocated_peak == 900 * mib);
  BOOST_TEST((asked == std::vector<int>{2, 2}));  // the meter's card, each time
  // NVML said nothing (this source has none): the context is not measured, and said so as -1.
  BOOST_TEST(!reading.context.held.has_value());
  BOOST_TEST(!meter->context().held.has_value());
  BOOST_TEST(!meter->context().created.has_value());
  BOOST_TEST((memory_figures(reading, 64 * mib)
              == figures{{"peak_memory_bytes", 1280 * mib}, {"activation_bytes", 64 * mib},
                         {"peak_allocated_bytes", 900 * mib}, {"cuda_context_bytes", -1},
                         {"cuda_context_created_bytes", -1}}));
  // Figures read later are the allocator's then.
  now.reserved_peak = 2048 * mib;
  BOOST_TEST(meter->read().peak == 2048 * mib);
}

BOOST_AUTO_TEST_CASE(the_cuda_context_is_what_the_process_holds_on_the_card_besides_the_allocators_blocks) {
  // The card as NVML counts it: another user's job holds 20 GiB; creating this process's context
  // takes 500 MiB, and by the end the process holds the context, 14 MiB the libraries took for
  // themselves and the allocator's 1 GiB.
  std::int64_t card_used = 20480 * mib;
  std::optional<std::int64_t> held;
  std::vector<std::string> calls;
  cuda_sources sources;
  sources.figures = [&](int) {
    return std::optional<torch_compat::cuda_memory_figures>{{300 * mib, 900 * mib, 1024 * mib, 1280 * mib, 80LL << 30}};
  };
  sources.usage = [&](int card) {
    calls.push_back("usage " + std::to_string(card));
    return card_usage{card_used, held};
  };
  sources.create_context = [&](int card) {
    calls.push_back("create " + std::to_string(card));
    card_used += 500 * mib;
  };
  auto meter = cuda_meter(1, sources);
  BOOST_REQUIRE(meter != nullptr);
  // The card's figure is read just before and just after the context is created; reading the
  // allocator (around every forward pass) does not ask the driver.
  BOOST_TEST((calls == std::vector<std::string>{"usage 1", "create 1", "usage 1"}));
  BOOST_TEST(!meter->read().context.held.has_value());
  BOOST_TEST(calls.size() == 3u);
  // Where NVML lists the process (not in a container's PID namespace): all it holds but the blocks.
  held = 500 * mib + 14 * mib + 1024 * mib;
  card_used += 14 * mib + 1024 * mib + 4096 * mib;  // and the other user's job grew meanwhile
  BOOST_TEST(*meter->context().held == 514 * mib);
  // Besides: the card's growth while the context was created, which does not need the process listed.
  BOOST_TEST(*meter->context().created == 500 * mib);
  held.reset();
  BOOST_TEST(!meter->context().held.has_value());
  BOOST_TEST(*meter->context().created == 500 * mib);
  auto reading = meter->read();
  reading.context = meter->context();
  auto figures = memory_figures(reading, 0);
  BOOST_TEST(figures[figures.size() - 2] == (std::pair<std::string, std::int64_t>{"cuda_context_bytes", -1}));
  BOOST_TEST(figures.back() == (std::pair<std::string, std::int64_t>{"cuda_context_created_bytes", 500 * mib}));
}

BOOST_AUTO_TEST_CASE(a_context_that_existed_already_is_not_measured) {
  // An earlier run in the process created it: the card does not grow, and NVML does not list the
  // process. A growth of less than a context's (another process's small allocation) is none either.
  BOOST_TEST(!created_context({8192 * mib, 8192 * mib}).has_value());
  BOOST_TEST(!created_context({8192 * mib, 8192 * mib + 2 * mib}).has_value());
  BOOST_TEST(!created_context({std::nullopt, 8192 * mib}).has_value());
  BOOST_TEST(*created_context({8192 * mib, 8704 * mib}) == 512 * mib);
  // NVML's figure for the process below the allocator's (read at different moments): not a context.
  BOOST_TEST(!held_context(1000 * mib, 1024 * mib).has_value());
  BOOST_TEST(!held_context(std::nullopt, 0).has_value());
  BOOST_TEST(*held_context(1600 * mib, 1024 * mib) == 576 * mib);
}

BOOST_AUTO_TEST_CASE(a_card_without_figures_has_no_meter) {
  BOOST_TEST(!cuda_meter(0, {[](int) { return std::optional<torch_compat::cuda_memory_figures>{}; }}));
  // This machine has no GPU: the real source has no figures for a card it does not have, in
  // either torch configuration (with CUDA, no device; without, nothing at all).
  if (!torch_compat::has_cuda())
    BOOST_TEST(!cuda_meter(0));
}

BOOST_AUTO_TEST_SUITE_END()
