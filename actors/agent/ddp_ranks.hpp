#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace cdui::actors {

/// The other ranks of a run trained with DDP (seed 001, "Train one model on several cards"): the
/// run's process is rank 0; ranks 1..N-1 are `cdui exec RUNDIR --rank K --world-size N` beside it,
/// each on the run's card K. The run supervisor starts and watches them: a rank that ends without
/// succeeding fails the run, naming it, and the run is reported only once every rank has exited.
class ddp_ranks {
public:
  /// How many ranks a run of `graph_json` on `cards` cards has: the cards, when a TrainingLoop of
  /// the graph trains with strategy ddp and there are two or more; else 1 (one process).
  [[nodiscard]] static int world_size(const std::string& graph_json, std::size_t cards);

  /// Starts ranks 1..world-1 (their pids in dir/exec-rank<K>.pid); the reason when one cannot start.
  [[nodiscard]] std::optional<std::string> start(const std::filesystem::path& binary,
                                                 const std::filesystem::path& dir, int world,
                                                 const std::map<std::string, std::string>& env);
  /// The ranks an earlier agent process started in `dir`, watched through /proc from now on.
  void recover(const std::filesystem::path& dir);

  /// Looks at the ranks still running: the first of those that ended since the last look without
  /// succeeding, as the run's error ("DDP rank 1 of 2 failed: ..."); nullopt when none did. The
  /// supervisor keeps the first it is told.
  [[nodiscard]] std::optional<std::string> look();
  /// Whether every rank has exited (true with none).
  [[nodiscard]] bool all_exited() const;
  /// Sends `sig` to every rank still running.
  void signal(int sig);

private:
  struct rank {
    int k = 0;
    pid_t pid = -1;
    bool child = true;  // false: an earlier agent's, watched through /proc
    bool exited = false;
  };
  std::filesystem::path dir_;
  int world_ = 1;
  std::vector<rank> ranks_;
};

} // namespace cdui::actors
