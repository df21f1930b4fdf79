#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cdui::devices {

/// A simulated accelerator: scheduled like a card (one run at a time, its own queue), executed on
/// the CPU, with its memory capped and measured by the counting allocator.
struct sim_card {
  int index = 0;
  std::int64_t total_bytes = 0;
  std::string uuid;
  /// This process's own card ("SIM-<hostname>-<pid>-<i>"): its memory segment goes with the process.
  bool own = false;
};

/// Reads a size: "8GiB", "512MiB", "2GB", "1048576", "64M", "1.5G". Binary units (KiB..TiB, and
/// K, M, G, T and Ki..Ti as docker and kubectl write them) are powers of 1024, decimal ones (KB..TB)
/// powers of 1000.
/// "1.50 GiB", "768.0 MiB", "12 B".
[[nodiscard]] std::string format_bytes(std::int64_t bytes);

[[nodiscard]] std::variant<std::int64_t, std::string> parse_bytes(std::string_view text);

/// Parses CODEFYUI_SIM_DEVICES / --sim-devices: comma-separated entries "[Nx]SIZE[@CARD]", e.g.
/// "2x8GiB" or "8GiB,4GiB". A card's UUID is "SIM-<hostname>-<pid>-<index>": a simulated card is
/// this process's own. "@CARD" makes them "SIM-CARD-<i>" (i counts within the entry), the same in
/// every process given that name: simulated cards that stand for one physical card two offerers
/// share (the server and an agent on one machine). "SIZE=UUID" is one card that is another
/// process's card UUID (a worker run's process is given its worker's cards so). The error names
/// the entry that is wrong.
[[nodiscard]] std::variant<std::vector<sim_card>, std::string> parse_sim_devices(std::string_view text);

/// "SIM-<hostname>-": how the UUID of every own card of a process on this host begins (then its
/// pid, '-', its index).
[[nodiscard]] std::string own_sim_card_prefix();

} // namespace cdui::devices
