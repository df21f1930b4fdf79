#include "apps/agent_watch.hpp"

#include <cstdlib>

#include <unistd.h>

#include "actors/common/env_settings.hpp"
#include "actors/policy/orphan_clock.hpp"
#include "apps/agent_files.hpp"
#include "devices/process_identity.hpp"

namespace cdui::apps {

agent_watch::agent_watch(std::filesystem::path agent_dir, std::chrono::milliseconds grace,
                         std::function<void(const std::string&)> stop)
  : agent_dir_(std::move(agent_dir)), parent_(::getppid()), grace_(grace), stop_(std::move(stop)),
    thread_([this] { run(); }) {}

agent_watch::~agent_watch() {
  {
    std::lock_guard lock{mutex_};
    done_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::chrono::milliseconds agent_watch::grace_from_env() {
  double seconds = policy::default_resume_grace_s;
  if (const char* text = std::getenv("CODEFYUI_WORKER_RESUME_GRACE_S"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    double given = std::strtod(text, &end);
    if (end != text && *end == '\0' && given >= 0 && given <= 86400)
      seconds = given;
  }
  return std::chrono::milliseconds{static_cast<std::int64_t>(seconds * 1000)};
}

bool agent_watch::agent_there() const {
  // Its own agent (a child is handed to init, or a subreaper, when its parent dies), or one that
  // came back and wrote its pid.
  if (::getppid() == parent_)
    return true;
  auto pid = agent_pid(agent_dir_);
  return pid && *pid != parent_ && devices::process_alive(*pid);
}

void agent_watch::run() {
  policy::orphan_clock clock{grace_.count()};
  auto steady_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
  };
  std::unique_lock lock{mutex_};
  while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return done_; })) {
    if (!clock.gone_for_grace(agent_there(), steady_ms()))
      continue;
    stop_("its agent has been gone for " + actors::seconds_text(grace_.count())
          + " s (CODEFYUI_WORKER_RESUME_GRACE_S) and none came back for it");
    return;
  }
}

} // namespace cdui::apps
