#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "devices/sim_card_memory.hpp"
#include "devices/sim_devices.hpp"

namespace cdui::devices {

/// Makes `cards` this process's sim cards, by their names sim:<index> (host_inventory::probe calls
/// it; the last call wins). When this process exits, its own cards' segments are deleted, and those
/// of the other cards its runs charged unless another process that charged them still runs
/// (sim_card_memory::remove_if_last). The segments of own cards of processes on this host that
/// ended without deleting theirs (a crash) are deleted now.
void use_sim_cards(const std::vector<sim_card>& cards);

/// What this process's exit does for its sim cards (above), done now, once: for a process that
/// ends without running static destructors (std::_Exit).
void release_sim_cards();

/// The shared memory of the sim card `device` names ("sim:1"), when it is one of this process's
/// cards and has `total_bytes`; nullptr otherwise (not a sim card, or a card of another size, such
/// as one `cdui fit` imagines), and then a scope counts its bytes in this process alone.
[[nodiscard]] std::shared_ptr<sim_card_memory> sim_card_for(const std::string& device,
                                                            std::int64_t total_bytes);

/// What a sim card has free now: `total_bytes` less what every process holds on it (the card's
/// segment, read without creating it: a card no process has charged yet has all its memory free).
[[nodiscard]] std::int64_t sim_card_free_bytes(const std::string& uuid, std::int64_t total_bytes);

} // namespace cdui::devices
