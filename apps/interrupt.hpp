#pragma once

namespace cdui::apps {

/// Ctrl+C (SIGINT) and SIGTERM for a command that follows a run: the first one sets a flag that the
/// command polls; a second one ends the process at once, by the signal.
void catch_interrupts();

/// Whether Ctrl+C (or SIGTERM) arrived since catch_interrupts().
[[nodiscard]] bool interrupted();

/// `code`, for a command to return; except when a run's thread was abandoned (it missed its stop
/// deadline and still executes): then the process ends here with `code` (exit_now: output
/// flushed, no static destructor run under a thread that is still training).
[[nodiscard]] int exit_code_unless_runs_abandoned(int code);

} // namespace cdui::apps
