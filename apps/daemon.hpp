#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace cdui::apps {

/// How a daemon's start went.
struct daemon_start {
  enum class outcome { ready, exited, timed_out } result = outcome::exited;
  pid_t pid = -1;
  /// When it exited: its exit code (-1 when a signal ended it).
  int exit_code = -1;
};

/// Starts this executable with `args` (e.g. {"start", "--foreground"}) as a daemon: its own
/// session, its standard streams on /dev/null, no descriptor of this process inherited (a pipe a
/// caller waits on to close, say). Then polls `ready(pid)` every 50 ms until it says yes, the
/// daemon exits, or `timeout` passes.
[[nodiscard]] daemon_start start_daemon(const std::vector<std::string>& args,
                                        const std::function<bool(pid_t)>& ready,
                                        std::chrono::seconds timeout);

} // namespace cdui::apps
