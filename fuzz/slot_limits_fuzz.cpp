// libFuzzer target: the operator's slot-limit overrides (actors/policy/slot_limits.hpp,
// CODEFYUI_RUN_QUEUE_MAX_CONCURRENT) and the simulated-card spec (devices/sim_devices.hpp,
// CODEFYUI_SIM_DEVICES and --sim-devices). The first byte picks the parser (and the current CUDA
// card); the rest is the variable's value. Checks what the headers promise: a bad entry is a
// warning, never fatal; every limit kept is at least 1; every sim card has a positive size.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "actors/policy/slot_limits.hpp"
#include "devices/sim_devices.hpp"

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "slot_limits_fuzz: %s\n", what.c_str());
  std::abort();
}

std::size_t entries(std::string_view text) {
  std::size_t n = 1;
  for (char c : text)
    n += c == ',';
  return n;
}

void slot_limits(std::string_view text, int current_cuda) {
  auto parsed = cdui::policy::parse_slot_limits(text, current_cuda);
  if (parsed.limits.size() + parsed.warnings.size() > entries(text))
    fail("more limits and warnings than entries");
  for (const auto& [key, limit] : parsed.limits) {
    if (key.empty())
      fail("an empty slot key");
    if (limit < 1)
      fail("a limit below 1 for '" + key + "'");
  }
  for (const auto& w : parsed.warnings)
    if (w.rfind(cdui::policy::slot_limits_env, 0) != 0)
      fail("a warning that does not name the variable: " + w);
}

void sim_devices(std::string_view text) {
  auto parsed = cdui::devices::parse_sim_devices(text);
  if (auto* error = std::get_if<std::string>(&parsed)) {
    if (error->empty())
      fail("a refusal without a message");
    return;
  }
  const auto& cards = std::get<std::vector<cdui::devices::sim_card>>(parsed);
  if (cards.size() > 64 * entries(text))
    fail("more than 64 cards an entry");
  for (std::size_t i = 0; i < cards.size(); ++i) {
    if (cards[i].index != static_cast<int>(i))
      fail("card indexes are not 0, 1, 2, ...");
    if (cards[i].total_bytes <= 0)
      fail("a sim card of " + std::to_string(cards[i].total_bytes) + " bytes");
    if (cards[i].uuid.rfind("SIM-", 0) != 0)
      fail("a sim card UUID without SIM-: " + cards[i].uuid);
  }
}

void bytes(std::string_view text) {
  auto parsed = cdui::devices::parse_bytes(text);
  if (auto* n = std::get_if<std::int64_t>(&parsed); n != nullptr && *n <= 0)
    fail("a size of " + std::to_string(*n) + " bytes was accepted");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  std::string_view text{reinterpret_cast<const char*>(data) + 1, size - 1};
  switch (data[0] % 3) {
  case 0: slot_limits(text, (data[0] >> 2) % 4); break;
  case 1: sim_devices(text); break;
  case 2: bytes(text); break;
  }
  return 0;
}
