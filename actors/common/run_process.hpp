#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "messages/run_outcome.hpp"
#include "runtime/engine.hpp"

namespace cdui::actors {

/// Starts `binary exec [--pipe] dir`: a session of its own (a signal to its parent's group does
/// not reach it), stdin /dev/null, stderr to dir/exec.log, stdout to `stdout_fd` (or exec.log too
/// when it is -1), the parent's environment with `env` set over it. SIGTERM and SIGUSR1 stay
/// blocked in the child until `cdui exec` installs its handlers, so a stop sent as it starts is
/// not lost. With `pipe` (a server's run), the child is killed when the thread that started it
/// ends (PR_SET_PDEATHSIG), so it never outlives a killed server. Safe in a multi-threaded parent
/// (nothing but async-signal-safe calls after fork).
/// The child's pid, or -1 when fork failed.
/// `extra` goes after the folder (a DDP rank's `--rank K --world-size N`).
[[nodiscard]] pid_t start_exec(const std::filesystem::path& binary, const std::filesystem::path& dir,
                               bool pipe, int stdout_fd,
                               const std::map<std::string, std::string>& env,
                               const std::vector<std::string>& extra = {});

/// Why a run's process ended without an outcome (a waitpid status), for the run's error.
[[nodiscard]] std::string process_exit_reason(int status);

/// The outcome a finished `cdui exec` wrote into dir/outcome.json (`file`: a DDP rank's
/// outcome-rank<k>.json), if it wrote one.
[[nodiscard]] std::optional<run_outcome> read_outcome(const std::filesystem::path& dir,
                                                      const std::string& file = "outcome.json");

/// Executes a local run in a process of its own (`cdui start --isolation process`): writes
/// run.json into ctx.run_dir, starts `binary exec --pipe RUN_DIR` and blocks until the process
/// has ended. Every event line it prints goes to ctx.emit, as if the engine ran here; ctx.stop is
/// forwarded as SIGTERM (cancel) and ctx.interrupt as SIGUSR1 (the server's stop). When
/// `kill_reason` returns a sentence (a missed stop deadline), the process is killed (SIGKILL) and
/// the run ends interrupted with it. The outcome is the process's outcome.json, or failed naming
/// the signal or exit code that ended it without one. Runs on the run's executor thread.
[[nodiscard]] run_outcome execute_in_process(const std::filesystem::path& binary,
                                             const runtime::run_context& ctx,
                                             const std::string& options_json,
                                             const std::function<std::string()>& kill_reason);

} // namespace cdui::actors
