#pragma once
// Which failure a DDP run across workers ends with when rank 0's worker and another worker both
// report one (docs/ddp.md, "Across workers"): plain data, tested directly; the run actor asks when
// rank 0's outcome arrives. When one rank dies, the others' collectives fail with it ("Connection
// closed by peer"), and the reports of two workers reach the server in either order: the rank that
// failed on its own is the cause, whichever report came first.

#include <string>
#include <string_view>

#include "messages/run_outcome.hpp"

namespace cdui::policy {

/// Whether a rank's error says it lost the other ranks (a connection to one closed, reset or
/// refused, a collective that timed out, a store that went), which is what the ranks left say
/// when one dies, rather than a failure of its own.
[[nodiscard]] bool lost_the_other_ranks(std::string_view error);

/// Whether a part's failure (`error`) is to be the run's: not when the run was asked to stop before
/// it (a cancel, the server's stop) and it only lost the other ranks, which the stop ended.
[[nodiscard]] bool part_failure_counts(std::string_view error, bool stop_asked_before);

/// Whether a worker's part ends with the failure of one of its ranks (`rank_error`) rather than its
/// process's (its first rank's: `process_failed`, `process_error`): yes when the rank failed while
/// the process still ran (the process was killed for it), or after it when the process only lost
/// the other ranks and the rank failed on its own (the agent may hear of the two in either order).
[[nodiscard]] bool rank_failure_is_cause(bool process_failed, std::string_view process_error,
                                         std::string_view rank_error, bool rank_failed_after_exit);

/// Whether rank 0's outcome (`rank0`, its worker's report) waits for the parts still running on
/// other workers before it is the run's: it failed only by losing the other ranks and no part has
/// failed yet, so a rank that died on its own elsewhere is about to say so (the two reports reach
/// the server in either order).
[[nodiscard]] bool awaits_part_failure(const run_outcome& rank0, bool part_failed, bool parts_running);

/// The run's outcome from rank 0's (`rank0`, its worker's report) and the first failure a part on
/// another worker reported (`part_failure`, empty when none did): rank 0's when it succeeded, when
/// no part failed, or when it failed on its own and the part only lost it; otherwise the part's
/// failure, which the server stopped rank 0 for.
[[nodiscard]] run_outcome ddp_run_outcome(run_outcome rank0, const std::string& part_failure);

} // namespace cdui::policy
