#pragma once

#include <string>
#include <vector>

#include "messages/run_request.hpp"

namespace cdui::policy {

/// What a restarted server does with one run its store lists as unfinished.
struct recovery_step {
  enum class action {
    requeue,  // queued again, in its old order, from its stored graph and options
    adopt,    // a worker run left running: it holds its slots and waits for its worker
    end,      // ends now with `status` and `reason`, without an actor
  };
  action what = action::end;
  std::string run_id;
  /// For requeue and adopt: the request rebuilt from the stored name and options (the caller adds
  /// the stored graph). A run for any worker or
  /// the pool that a worker was executing is that worker's run (its stored queue key
  /// "<worker>/<device>"), and a worker run resumes on the device it was given.
  run_request request;
  run_status status = run_status::failed;
  std::string reason;
};

/// The restart's plan, one step per run in the store's order (the order they were queued in).
/// `has_workers`: the server has a worker registry, so a worker run left running (a queue key
/// with an offerer) may still be going on its worker; every other run left running ends
/// interrupted, and a run whose stored options no longer read ends failed.
[[nodiscard]] std::vector<recovery_step> recovery_plan(const std::vector<run_info>& unfinished,
                                                       bool has_workers);

/// The reason of a run left running that nobody can bring back.
inline constexpr const char* stopped_while_running = "the server stopped while the run was running";
/// The beginning of the reason of a run that cannot be queued again.
inline constexpr const char* not_requeued = "could not be queued again after a restart: ";

} // namespace cdui::policy
