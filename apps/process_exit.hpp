#pragma once

namespace cdui::apps {

/// Ends the process here with `code`: stdio and spdlog flushed, this process's sim cards released
/// (devices::release_sim_cards), and no static destructor run (std::_Exit).
[[noreturn]] void exit_now(int code);

/// How a cdui command ends: exit_now, because libtorch's static destructors deregister every
/// operator it registered at start, 70-110 ms of every cdui process (docs/benchmarks.md). Built
/// with a sanitizer, std::exit instead, so that the leak check at exit still runs.
[[noreturn]] void exit_after_command(int code);

} // namespace cdui::apps
