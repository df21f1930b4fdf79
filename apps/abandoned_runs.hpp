#pragma once

namespace cdui::apps {

/// `code`, for a command to return; except when a run's thread was abandoned (it missed its stop
/// deadline and still executes): then the process ends here with `code` (exit_now: output
/// flushed, no static destructor run under a thread that is still training).
[[nodiscard]] int exit_code_unless_runs_abandoned(int code);

} // namespace cdui::apps
