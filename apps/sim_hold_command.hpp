#pragma once

#include <string>

namespace cdui::apps {

/// `cdui sim-hold UUID SIZE` (hidden, for tests): takes SIZE of the sim card UUID's memory from
/// outside cdui's runs, as another user's job takes a real card's, and holds it until SIGTERM or
/// SIGINT (then gives it back and exits 0) or SIGKILL (the next look at the card reclaims it).
/// Prints "holding SIZE on UUID" once the bytes are charged; exits 1 when the card has less free
/// (the card's total is the one its processes gave it), 2 on a bad size or UUID.
[[nodiscard]] int sim_hold_command(const std::string& uuid, const std::string& size);

} // namespace cdui::apps
