// `cdui devices`: the rows docs/cli.md shows ("cdui devices"), and whether each device does bf16 natively.
#include <boost/test/unit_test.hpp>

#include "apps/devices_table.hpp"

using cdui::apps::devices_table;
using cdui::devices::offered_device;

namespace {

const auto native = cdui::devices::bf16_support_of("flags : avx512_bf16 amx_bf16\n");
const auto emulated = cdui::devices::bf16_support_of("flags : avx2\n");

offered_device cuda(int i) {
  return {"cuda:" + std::to_string(i), "NVIDIA CUDA #" + std::to_string(i), 1, false, 0, ""};
}

const offered_device cpu{"cpu", "CPU (2 cores)", 2, false, 0, ""};

} // namespace

BOOST_AUTO_TEST_SUITE(devices_table_test)

BOOST_AUTO_TEST_CASE(the_cpu_and_sim_cards_say_whether_bf16_is_native) {
  offered_device sim{"sim:0", "simulated accelerator #0 (8.00 GiB, executes on the CPU)", 1, true, 8LL << 30, ""};
  BOOST_TEST(devices_table({cpu, sim}, emulated)
             == "DEVICE  SLOTS  BF16                                     DESCRIPTION\n"
                "cpu     2      not native (no avx512_bf16 or amx_bf16)  CPU (2 cores)\n"
                "sim:0   1      not native (no avx512_bf16 or amx_bf16)  simulated accelerator #0 (8.00 GiB, "
                "executes on the CPU) [simulated]\n");
  BOOST_TEST(devices_table({cpu}, native)
             == "DEVICE  SLOTS  BF16                               DESCRIPTION\n"
                "cpu     2      native (avx512_bf16 and amx_bf16)  CPU (2 cores)\n");
}

BOOST_AUTO_TEST_CASE(one_cuda_card_is_listed_once_as_cuda_and_several_after_the_current_one) {
  BOOST_TEST(devices_table({cpu, cuda(0)}, native)
             == "DEVICE  SLOTS  BF16                               DESCRIPTION\n"
                "cpu     2      native (avx512_bf16 and amx_bf16)  CPU (2 cores)\n"
                "cuda    1      -                                  NVIDIA CUDA #0, cuda:0, the only card\n");
  BOOST_TEST(devices_table({cpu, cuda(0), cuda(1)}, native)
             == "DEVICE  SLOTS  BF16                               DESCRIPTION\n"
                "cpu     2      native (avx512_bf16 and amx_bf16)  CPU (2 cores)\n"
                "cuda    -      -                                  NVIDIA CUDA (whichever card torch is currently pointed at)\n"
                "cuda:0  1      -                                  NVIDIA CUDA #0\n"
                "cuda:1  1      -                                  NVIDIA CUDA #1\n");
}

BOOST_AUTO_TEST_CASE(a_cuda_card_shows_what_the_driver_says_of_it) {
  offered_device h100{"cuda:0", "NVIDIA H100 80GB HBM3 (GPU-1a2b3c4d, 79.65 GiB, compute 9.0)", 1, false,
                      85520809984, "GPU-1a2b3c4d-0011-2233-4455-66778899aaff", 9, 0};
  BOOST_TEST(devices_table({cpu, h100}, emulated)
             == "DEVICE  SLOTS  BF16                                     DESCRIPTION\n"
                "cpu     2      not native (no avx512_bf16 or amx_bf16)  CPU (2 cores)\n"
                "cuda    1      native (compute 9.0)                     NVIDIA H100 80GB HBM3 (GPU-1a2b3c4d, "
                "79.65 GiB, compute 9.0), cuda:0, the only card\n");
}

BOOST_AUTO_TEST_CASE(a_cuda_card_s_bf16_is_native_from_compute_capability_8_0) {
  auto t4 = cuda(1);
  t4.compute_major = 7;
  t4.compute_minor = 5;
  auto a100 = cuda(0);
  a100.compute_major = 8;
  BOOST_TEST(devices_table({cpu, a100, t4}, native)
             == "DEVICE  SLOTS  BF16                                 DESCRIPTION\n"
                "cpu     2      native (avx512_bf16 and amx_bf16)    CPU (2 cores)\n"
                "cuda    -      -                                    NVIDIA CUDA (whichever card torch is currently "
                "pointed at)\n"
                "cuda:0  1      native (compute 8.0)                 NVIDIA CUDA #0\n"
                "cuda:1  1      not native (compute 7.5, below 8.0)  NVIDIA CUDA #1\n");
}

BOOST_AUTO_TEST_SUITE_END()
