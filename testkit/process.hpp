#pragma once

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace cdui::test {

/// A child process with this process's environment and `env` over it; its stdout and stderr are
/// captured (out(), err()), or both written to `log` when one is given. The destructor kills
/// (SIGKILL) and reaps it if it is still running, so a failing test never leaves a process behind.
/// Once it has exited, what it wrote is read until the pipes fall silent: a process it left behind
/// that holds them (an agent's run, stopped before its exec) does not keep the test waiting.
class process {
public:
  process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
          const std::optional<std::filesystem::path>& log = std::nullopt) {
    // Everything the child needs is built before the fork: this process has threads, and the
    // child may call only async-signal-safe functions until it execs.
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string kv = *e;
      if (!env.count(kv.substr(0, kv.find('='))))
        env_text.push_back(kv);
    }
    for (const auto& [k, v] : env)
      env_text.push_back(k + "=" + v);
    std::vector<char*> args, envp;
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (auto& e : env_text)
      envp.push_back(e.data());
    envp.push_back(nullptr);

    // Close-on-exec: no other child started meanwhile keeps these open (a daemon would hold a
    // pipe alive); dup2 gives the child's own copies without the flag.
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    if (log) {
      out[1] = err[1] = ::open(log->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (out[1] < 0)
        throw std::runtime_error("cannot open " + log->string());
    } else if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe failed");
    }
    pid_ = ::fork();
    if (pid_ < 0)
      throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      ::execve(args[0], args.data(), envp.data());
      ::_exit(127);
    }
    ::close(out[1]);
    if (log) {
      closed_ = true;
      return;
    }
    ::close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
    reader_ = std::thread([this] { read_all(); });
  }

  ~process() {
    if (!exit_code_) {
      ::kill(pid_, SIGKILL);
      wait_for(std::chrono::seconds(10));
    }
    if (reader_.joinable())
      reader_.join();
  }

  process(const process&) = delete;
  process& operator=(const process&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }

  void signal(int sig) { ::kill(pid_, sig); }

  /// Waits for the exit; the exit code (128 + signal for a signal), or nullopt after `timeout`.
  std::optional<int> wait_for(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exit_code_) {
      int status = 0;
      auto r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        reaped_ = true;
        break;
      }
      if (std::chrono::steady_clock::now() > deadline)
        return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (reader_.joinable())
      reader_.join();
    return exit_code_;
  }

  /// Whether it has exited (and been reaped).
  [[nodiscard]] bool exited() { return wait_for(std::chrono::milliseconds(0)).has_value(); }

  /// SIGTERM, then SIGKILL if it has not exited after `grace`; the seconds it took to exit
  /// (0 when it had exited already).
  double stop(std::chrono::milliseconds grace = std::chrono::seconds(60)) {
    if (exited())
      return 0;
    auto start = std::chrono::steady_clock::now();
    signal(SIGTERM);
    if (!wait_for(grace)) {
      signal(SIGKILL);
      wait_for(std::chrono::seconds(10));
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  /// Waits until stdout contains `text`; false after `timeout` or when the process has exited.
  bool wait_for_output(const std::string& text, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock{mutex_};
        if (out_.find(text) != std::string::npos)
          return true;
        if (closed_)
          return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  /// What it wrote so far (empty when it writes to a log file).
  [[nodiscard]] std::string out() {
    std::lock_guard<std::mutex> lock{mutex_};
    return out_;
  }
  [[nodiscard]] std::string err() {
    std::lock_guard<std::mutex> lock{mutex_};
    return err_;
  }

private:
  void read_all() {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    int open = 2;
    char buf[4096];
    while (open > 0) {
      auto ready = ::poll(fds, 2, silence_ms);
      if (ready < 0 || (ready == 0 && reaped_))
        break;
      for (auto& f : fds) {
        if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP)))
          continue;
        auto n = ::read(f.fd, buf, sizeof buf);
        if (n <= 0) {
          ::close(f.fd);
          f.fd = -1;
          --open;
          continue;
        }
        std::lock_guard<std::mutex> lock{mutex_};
        (f.fd == out_fd_ ? out_ : err_).append(buf, static_cast<std::size_t>(n));
      }
    }
    for (auto& f : fds)
      if (f.fd >= 0)
        ::close(f.fd);
    std::lock_guard<std::mutex> lock{mutex_};
    closed_ = true;
  }

  /// After the exit, this long without output ends the reading.
  static constexpr int silence_ms = 200;

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::thread reader_;
  std::mutex mutex_;
  std::string out_;
  std::string err_;
  bool closed_ = false;
  std::optional<int> exit_code_;
  std::atomic<bool> reaped_{false};
};

/// A command that has exited: its exit code, stdout and stderr.
struct finished_command {
  int code = -1;
  std::string out;
  std::string err;
};

/// Runs `argv` with `env` over this environment and waits for it; throws after `timeout`.
inline finished_command run_command(const std::vector<std::string>& argv,
                                    const std::map<std::string, std::string>& env,
                                    std::chrono::milliseconds timeout) {
  process p{argv, env};
  auto code = p.wait_for(timeout);
  if (!code)
    throw std::runtime_error(argv.at(0) + (argv.size() > 1 ? " " + argv[1] : "")
                             + " did not exit in time; stdout:\n" + p.out() + "\nstderr:\n" + p.err());
  return {*code, p.out(), p.err()};
}

} // namespace cdui::test
