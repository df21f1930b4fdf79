#include "actors/policy/rank_failure.hpp"

#include <array>

namespace cdui::policy {

bool lost_the_other_ranks(std::string_view error) {
  // Gloo's and c10d's words (torch 1.13 and 2.x) when a peer or the store went away, and ours
  // when a rank could not reach the others (runtime/nodes/ddp.cpp).
  static constexpr std::array<std::string_view, 9> words{
    "Connection closed by peer", "Connection reset by peer", "Broken pipe", "Connection refused",
    "Timed out", "timed out", "could not join the other ranks",
    "remote process exited",  // NCCL's ncclRemoteError
    "got 0 bytes"};           // c10d's store client when its server went
  for (auto w : words)
    if (error.find(w) != std::string_view::npos)
      return true;
  return false;
}

bool part_failure_counts(std::string_view error, bool stop_asked_before) {
  return !stop_asked_before || !lost_the_other_ranks(error);
}

bool rank_failure_is_cause(bool process_failed, std::string_view process_error, std::string_view rank_error,
                           bool rank_failed_after_exit) {
  if (!rank_failed_after_exit || !process_failed)
    return true;
  return lost_the_other_ranks(process_error) && !lost_the_other_ranks(rank_error);
}

bool awaits_part_failure(const run_outcome& rank0, bool part_failed, bool parts_running) {
  return rank0.status == run_status::failed && lost_the_other_ranks(rank0.error) && !part_failed && parts_running;
}

run_outcome ddp_run_outcome(run_outcome rank0, const std::string& part_failure) {
  if (part_failure.empty() || rank0.status == run_status::succeeded)
    return rank0;
  if (rank0.status == run_status::failed && !lost_the_other_ranks(rank0.error) && lost_the_other_ranks(part_failure))
    return rank0;
  return {run_status::failed, part_failure, rank0.final_metrics};
}

} // namespace cdui::policy
