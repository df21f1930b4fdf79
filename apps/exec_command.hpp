#pragma once

#include <filesystem>

namespace cdui::apps {

/// `cdui exec RUNDIR`: executes one run that an agent prepared in RUNDIR (graph.json, run.json),
/// in this process, which is the run's own (a crash ends this run only). Events go to
/// RUNDIR/events.jsonl as they happen, and the end to RUNDIR/outcome.json; the agent reads both.
/// SIGTERM cancels the run between batches, SIGUSR1 interrupts it (the server stopped).
/// `pipe` (`cdui exec --pipe`, for a server with `--isolation process`): each event is a JSON line
/// on stdout instead, and the server, which owns the folder's events.jsonl, records it.
[[nodiscard]] int exec_command(const std::filesystem::path& run_dir, bool pipe = false);

} // namespace cdui::apps
