#pragma once

#include <filesystem>

namespace cdui::apps {

/// `cdui exec RUNDIR`: executes one run that an agent prepared in RUNDIR (graph.json, run.json),
/// in this process, which is the run's own (a crash ends this run only). Events go to
/// RUNDIR/events.jsonl as they happen, and the end to RUNDIR/outcome.json; the agent reads both.
/// SIGTERM cancels the run between batches, SIGUSR1 interrupts it (the server stopped).
/// `pipe` (`cdui exec --pipe`, for a server with `--isolation process`): each event is a JSON line
/// on stdout instead, and the server, which owns the folder's events.jsonl, records it.
/// A run trained with DDP (docs/ddp.md) is `world_size` such processes: `rank` k trains on the
/// run's card k (run.json's visible_devices), meeting the others at RUNDIR/ddp.store. Rank 0 is the
/// run as above; rank k > 0 runs with the run's seed (so the nodes before the loop give it the same
/// data), executes only the ddp TrainingLoops and the nodes that feed them, and writes its events
/// to RUNDIR/output-rank<k>.log and its end to RUNDIR/outcome-rank<k>.json.
[[nodiscard]] int exec_command(const std::filesystem::path& run_dir, bool pipe = false, int rank = 0,
                               int world_size = 1);

} // namespace cdui::apps
