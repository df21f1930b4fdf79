#pragma once

#include <chrono>
#include <csignal>
#include <cstdlib>
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

namespace cdui::test {

/// A child process with its stdout and stderr captured. The destructor kills and reaps it if it is
/// still running, so a failing test never leaves a process behind.
class process {
public:
  process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
    int out[2], err[2];
    if (::pipe(out) != 0 || ::pipe(err) != 0)
      throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ < 0)
      throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      // Only the duplicates stay open: a daemon the command starts must not keep the pipes alive.
      ::close(out[0]);
      ::close(err[0]);
      ::close(out[1]);
      ::close(err[1]);
      for (const auto& [k, v] : env)
        ::setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> args;
      for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(out[1]);
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
      if (::poll(fds, 2, -1) < 0)
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
    std::lock_guard<std::mutex> lock{mutex_};
    closed_ = true;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::thread reader_;
  std::mutex mutex_;
  std::string out_;
  std::string err_;
  bool closed_ = false;
  std::optional<int> exit_code_;
};

} // namespace cdui::test
