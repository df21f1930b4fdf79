#include "devices/process_identity.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <string>

namespace cdui::devices {

namespace {

/// Field 3 (state) and field 22 (starttime) of /proc/<pid>/stat; state '\0' when unreadable.
struct proc_stat {
  char state = '\0';
  std::uint64_t start_time = 0;
};

proc_stat read_proc_stat(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  auto paren = text.rfind(')');  // the command name, field 2, may hold spaces and parentheses
  if (paren == std::string::npos)
    return {};
  std::istringstream fields(text.substr(paren + 1));
  proc_stat s;
  std::string skip;
  fields >> s.state;
  for (int field = 4; field < 22 && fields; ++field)
    fields >> skip;
  fields >> s.start_time;
  return fields ? s : proc_stat{};
}

std::atomic<bool> identity_known{false};

} // namespace

const process_identity& own_identity() {
  static process_identity identity;
  static std::mutex reading;
  if (!identity_known.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock{reading};
    if (!identity_known.load(std::memory_order_relaxed)) {
      static std::once_flag forks;
      std::call_once(forks, [] { ::pthread_atfork(nullptr, nullptr, [] { identity_known.store(false); }); });
      identity.pid = static_cast<std::int32_t>(::getpid());
      identity.start_time = read_proc_stat(identity.pid).start_time;
      identity_known.store(true, std::memory_order_release);
    }
  }
  return identity;
}

bool process_alive(int pid, std::uint64_t start_time) {
  if (pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH))
    return false;
  auto stat = read_proc_stat(pid);
  if (stat.state == '\0')  // gone between the two looks, or /proc unreadable: trust kill()
    return ::kill(pid, 0) == 0 || errno != ESRCH;
  return stat.state != 'Z' && stat.state != 'X' && (start_time == 0 || stat.start_time == start_time);
}

} // namespace cdui::devices
