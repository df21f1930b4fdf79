#pragma once
// Memory taken on a sim card from outside cdui's runs: another user's job on the card.

#include <memory>
#include <stdexcept>
#include <string>

#include "testkit/server_process.hpp"

namespace cdui::test {

/// `cdui sim-hold UUID SIZE`, started and charged: SIZE of the sim card UUID's memory, held
/// until the process ends. stop() (SIGTERM) gives it back; SIGKILL leaves it to the next look at
/// the card, which reclaims a dead holder's bytes. Throws when the card has less free.
inline std::unique_ptr<process> hold_sim_memory(const std::string& uuid, const std::string& size) {
  auto holder = start_cdui({"sim-hold", uuid, size}, {});
  if (!holder->wait_for_output("holding ", std::chrono::seconds(30)))
    throw std::runtime_error("cdui sim-hold " + uuid + " " + size + " did not hold: " + holder->err());
  return holder;
}

} // namespace cdui::test
