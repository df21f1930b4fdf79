#pragma once

namespace cdui::apps {

/// Ctrl+C (SIGINT) and SIGTERM for a command that follows a run: the first one sets a flag that the
/// command polls; a second one ends the process at once, by the signal.
void catch_interrupts();

/// Whether Ctrl+C (or SIGTERM) arrived since catch_interrupts().
[[nodiscard]] bool interrupted();

} // namespace cdui::apps
