// Whether the CPU runs bf16 in hardware, from /proc/cpuinfo's flags.
#include <boost/test/unit_test.hpp>

#include "devices/cpu_features.hpp"

using cdui::devices::bf16_support_of;

BOOST_AUTO_TEST_SUITE(cpu_features_test)

BOOST_AUTO_TEST_CASE(avx512_bf16_or_amx_bf16_make_bf16_native) {
  auto both = bf16_support_of("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n");
  BOOST_TEST(both.native());
  BOOST_TEST(both.text() == "native (avx512_bf16 and amx_bf16)");
  auto one = bf16_support_of("flags : avx2 amx_bf16\n");
  BOOST_TEST(one.text() == "native (amx_bf16)");
  BOOST_TEST(one.lacks == std::vector<std::string>{"avx512_bf16"});
}

BOOST_AUTO_TEST_CASE(without_them_or_without_flags_it_is_not_native) {
  auto neither = bf16_support_of("flags\t: fpu avx2 avx512f avx512_bf16x\n");  // a longer word is not the flag
  BOOST_TEST(!neither.native());
  BOOST_TEST(neither.text() == "not native (no avx512_bf16 or amx_bf16)");
  BOOST_TEST(!bf16_support_of("").native());
  BOOST_TEST(!bf16_support_of("model name : amx_bf16\n").native());  // only the flags lines count
}

BOOST_AUTO_TEST_CASE(onednns_isa_cap_below_avx512_means_its_avx2_kernels) {
  using cdui::devices::isa_cap_allows_avx512;
  for (auto below : {"AVX2", "avx2", "AVX2_VNNI", "AVX", "SSE41"})
    BOOST_TEST(!isa_cap_allows_avx512(below), below);
  for (auto at : {"", "ALL", "AVX512_CORE", "avx512_core_bf16", "AVX512_CORE_AMX", "AMX_BF16"})
    BOOST_TEST(isa_cap_allows_avx512(at), at);
}

BOOST_AUTO_TEST_SUITE_END()
