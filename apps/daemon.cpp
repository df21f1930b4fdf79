#include "apps/daemon.hpp"

#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cdui::apps {

daemon_start start_daemon(const std::vector<std::string>& args,
                          const std::function<bool(pid_t)>& ready, std::chrono::seconds timeout) {
  std::vector<std::string> argv{"cdui"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (auto& a : argv)
    c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  daemon_start started;
  pid_t child = ::fork();
  if (child < 0)
    return started;
  if (child == 0) {
    ::setsid();
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::close_range(3, ~0U, 0);
    ::execv("/proc/self/exe", c_argv.data());
    ::_exit(127);
  }
  started.pid = child;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) == child) {
      started.result = daemon_start::outcome::exited;
      started.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return started;
    }
    if (ready(child)) {
      started.result = daemon_start::outcome::ready;
      return started;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  started.result = daemon_start::outcome::timed_out;
  return started;
}

} // namespace cdui::apps
