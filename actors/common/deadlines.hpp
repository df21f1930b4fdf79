#pragma once

#include <chrono>
#include <cstdint>

namespace cdui::actors {

/// How long a running run may take to reach its stop check after a cancel or the server's stop
/// (it checks between batches and between nodes); past it the run ends interrupted without it.
/// CODEFYUI_STOP_DEADLINE_S overrides it.
inline constexpr std::int64_t default_stop_deadline_ms = 10'000;

/// How long one actor waits for another's answer (the facade's requests included; a long-poll
/// waits its own time plus this): an actor that cannot answer costs its caller this long at most.
inline constexpr std::chrono::milliseconds request_deadline{30'000};

} // namespace cdui::actors
