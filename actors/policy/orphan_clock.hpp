#pragma once

#include <cstdint>

namespace cdui::policy {

/// How long the runs of a worker that lost its connection keep going before they end interrupted
/// (CODEFYUI_WORKER_RESUME_GRACE_S, 5 minutes: docs/workers.md, "Lost connections and the resume
/// grace"): the server keeps a lost worker's runs that long, and a worker run's process goes on
/// that long without its agent.
inline constexpr double default_resume_grace_s = 300.0;

/// A worker run's process whose agent is gone (killed, crashed, stopped): it goes on for the grace,
/// in case an agent comes back and finds it again from the run's pid files, then it stops, so that
/// no run trains on for nobody (a DDP run's ranks went on at full CPU until someone killed them).
/// Plain data, no clock: the run's process (apps/agent_watch.*) looks for its agent and ticks it.
class orphan_clock {
public:
  explicit orphan_clock(std::int64_t grace_ms) : grace_ms_(grace_ms) {}

  /// Whether an agent is there at `now_ms`; true once none has been for the whole grace (an agent
  /// that comes back within it starts the grace afresh the next time it goes).
  [[nodiscard]] bool gone_for_grace(bool agent_there, std::int64_t now_ms) {
    if (agent_there) {
      lost_ = false;
      return false;
    }
    if (!lost_) {
      lost_ = true;
      lost_since_ms_ = now_ms;
    }
    return now_ms - lost_since_ms_ >= grace_ms_;
  }

  [[nodiscard]] std::int64_t grace_ms() const { return grace_ms_; }

private:
  std::int64_t grace_ms_;
  bool lost_ = false;
  std::int64_t lost_since_ms_ = 0;
};

} // namespace cdui::policy
