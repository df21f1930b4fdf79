#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <sys/types.h>

namespace cdui::apps {

/// Watches a worker run's process (rank 0's, of a ddp run) for its agent: while
/// neither the agent that started it (its parent) nor one that came back since (agent.json in the
/// agent's folder names a live process) is there for the resume grace, `stop` is called once with
/// the reason (policy::orphan_clock). Looks every quarter of a second; stops with the object.
class agent_watch {
public:
  /// `agent_dir`: the agent's folder (the run's folder is agent_dir/runs/ID).
  agent_watch(std::filesystem::path agent_dir, std::chrono::milliseconds grace,
              std::function<void(const std::string&)> stop);
  ~agent_watch();
  agent_watch(const agent_watch&) = delete;
  agent_watch& operator=(const agent_watch&) = delete;

  /// The grace from CODEFYUI_WORKER_RESUME_GRACE_S (seconds, 0 to 86400), else 5 minutes.
  [[nodiscard]] static std::chrono::milliseconds grace_from_env();

private:
  [[nodiscard]] bool agent_there() const;
  void run();

  std::filesystem::path agent_dir_;
  pid_t parent_;
  std::chrono::milliseconds grace_;
  std::function<void(const std::string&)> stop_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

} // namespace cdui::apps
