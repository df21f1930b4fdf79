// The CUDA context a card's runs count besides their budgets (actors/policy/card_context.hpp): read
// from a run's final metrics, matched to the run's cards, the largest of each kind kept, and the
// allowance until a whole figure exists.
#include <boost/test/unit_test.hpp>

#include "actors/policy/card_context.hpp"

using namespace cdui::policy;

namespace {

constexpr std::int64_t mib = 1024LL * 1024;

} // namespace

BOOST_AUTO_TEST_SUITE(card_context_test)

BOOST_AUTO_TEST_CASE(a_runs_figures_are_read_from_its_final_metrics) {
  auto got = measured_contexts(R"({"loop": {"peak_memory_bytes": {"cuda:0": 2000000000},
                                            "cuda_context_bytes": {"cuda:0": 536870912, "cuda:1": -1},
                                            "cuda_context_created_bytes": {"cuda:0": 503316480, "cuda:1": 509607936}},
                                   "other": {"cuda_context_bytes": 5}, "x": 3})");
  BOOST_REQUIRE(got.size() == 2u);
  BOOST_TEST(*got["cuda:0"].held == 512 * mib);
  BOOST_TEST(*got["cuda:0"].created == 480 * mib);
  BOOST_TEST(!got["cuda:1"].held.has_value());  // -1: NVML did not list the process
  BOOST_TEST(*got["cuda:1"].created == 486 * mib);
  // Two loops on one card: the largest of each.
  auto two = measured_contexts(R"({"a": {"cuda_context_bytes": {"cuda:0": 536870912}},
                                   "b": {"cuda_context_bytes": {"cuda:0": 503316480},
                                         "cuda_context_created_bytes": {"cuda:0": 503316480}}})");
  BOOST_TEST(*two["cuda:0"].held == 512 * mib);
  BOOST_TEST(*two["cuda:0"].created == 480 * mib);
  // What is no context's figure is left out (below 64 MiB, past 16 GiB, not a whole number);
  // what is not such JSON gives none, whatever its bytes.
  BOOST_TEST(measured_contexts(R"({"loop": {"cuda_context_bytes": {"cuda:0": 1, "cuda:1": 0, "cuda:2": 1.5e8,
                                            "cuda:3": "536870912", "cuda:4": 99999999999999}}})").empty());
  BOOST_TEST(measured_contexts(R"({"loop": {"cuda_context_bytes": [536870912]}})").empty());
  BOOST_TEST(measured_contexts("").empty());
  BOOST_TEST(measured_contexts("[1, 2]").empty());
  const char hostile[] = "{\"\xff\xfe\": {\"cuda_context_bytes\": {\"\x00\": 536870912}}}";
  BOOST_TEST(measured_contexts(std::string{hostile, sizeof hostile - 1}).empty());
}

BOOST_AUTO_TEST_CASE(a_device_of_the_run_is_its_key_here_and_its_kth_card_on_a_worker) {
  // This server's cards keep their names.
  BOOST_TEST(*key_of_run_device({"cuda:1"}, "cuda:1") == "cuda:1");
  BOOST_TEST(!key_of_run_device({"cuda:1"}, "cuda:0").has_value());
  // A worker numbers a run's cards from 0 in the order of its keys.
  BOOST_TEST(*key_of_run_device({"gpu-box/cuda:1"}, "cuda:0") == "gpu-box/cuda:1");
  BOOST_TEST(*key_of_run_device({"gpu-box/cuda:1", "gpu-box/cuda:0"}, "cuda:0") == "gpu-box/cuda:1");
  BOOST_TEST(*key_of_run_device({"gpu-box/cuda:1", "gpu-box/cuda:0"}, "cuda:1") == "gpu-box/cuda:0");
  BOOST_TEST(!key_of_run_device({"gpu-box/cuda:1"}, "cuda:1").has_value());
  BOOST_TEST(!key_of_run_device({"gpu-box/cuda:1"}, "sim:0").has_value());
  BOOST_TEST(!key_of_run_device({"gpu-box/cuda:1"}, "cuda:x").has_value());
  BOOST_TEST(!key_of_run_device({"gpu-box/cuda:1"}, "cuda:99999999999999999999").has_value());
  // A set across workers: each numbers its own cards, so a name says no card for sure.
  BOOST_TEST(!key_of_run_device({"w1/cuda:0", "w2/cuda:0"}, "cuda:0").has_value());
  BOOST_TEST(!key_of_run_device({}, "cuda:0").has_value());
}

BOOST_AUTO_TEST_CASE(the_allowance_holds_until_a_whole_figure_and_then_the_largest_counts) {
  card_context card;
  BOOST_TEST(context_to_count(card, 768 * mib, "CUDA context").bytes == 768 * mib);
  BOOST_TEST(context_to_count(card, 768 * mib, "CUDA context").name == "CUDA context");
  // A bare context is kept but not counted, below the allowance or past it: the card's growth
  // around it counts what others took meanwhile too.
  BOOST_TEST(take_in(card, {std::nullopt, 500 * mib}, "a1"));
  BOOST_TEST(context_to_count(card, 768 * mib, "CUDA context").bytes == 768 * mib);
  BOOST_TEST(take_in(card, {std::nullopt, 4096 * mib}, "a2"));
  BOOST_TEST(card.created == 4096 * mib);
  BOOST_TEST(context_to_count(card, 768 * mib, "CUDA context").bytes == 768 * mib);
  // A whole figure replaces the allowance, smaller or not.
  BOOST_TEST(take_in(card, {600 * mib, 500 * mib}, "b2"));
  auto counted = context_to_count(card, 768 * mib, "CUDA context");
  BOOST_TEST(counted.bytes == 600 * mib);
  BOOST_TEST(counted.name == "CUDA context, measured by run b2");
  // A smaller one later changes nothing: a run that takes less does not make the others' less.
  BOOST_TEST(!take_in(card, {550 * mib, 480 * mib}, "c3"));
  BOOST_TEST(context_to_count(card, 768 * mib, "CUDA context").bytes == 600 * mib);
  // A larger one (NCCL's buffers, more kernels) counts from then on, for every run.
  BOOST_TEST(take_in(card, {1400 * mib, std::nullopt}, "d4"));
  BOOST_TEST(context_to_count(card, 768 * mib, "CUDA context").bytes == 1400 * mib);
  BOOST_TEST(context_to_count(card, 768 * mib, "CUDA context").name == "CUDA context, measured by run d4");
}

BOOST_AUTO_TEST_SUITE_END()
