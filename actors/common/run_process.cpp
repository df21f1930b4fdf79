#include "actors/common/run_process.hpp"

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "messages/json_text.hpp"
#include "storage/home.hpp"

extern char** environ;

namespace cdui::actors {

namespace {

/// How often the executor thread looks at the stop flags while the process prints nothing.
constexpr int flag_poll_ms = 100;

/// `environ` with `env` set over it, as execve wants it (built before fork: the child may only
/// make async-signal-safe calls).
std::vector<std::string> environment(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry{*e};
    auto name = entry.substr(0, entry.find('='));
    if (!env.count(name))
      out.push_back(std::move(entry));
  }
  for (const auto& [name, value] : env)
    out.push_back(name + "=" + value);
  return out;
}

/// Passes each whole line the process printed to ctx.emit; keeps a partial last line in `pending`.
void emit_lines(std::string& pending, const runtime::run_context& ctx) {
  std::size_t start = 0;
  for (auto end = pending.find('\n'); end != std::string::npos; end = pending.find('\n', start)) {
    auto j = nlohmann::json::parse(pending.begin() + static_cast<std::ptrdiff_t>(start),
                                   pending.begin() + static_cast<std::ptrdiff_t>(end), nullptr, false);
    start = end + 1;
    // Anything else on stdout (a library's print) is not an event.
    if (j.is_object() && j["type"].is_string() && ctx.emit)
      ctx.emit(j["type"].get<std::string>(), j["data"]);
  }
  pending.erase(0, start);
}

} // namespace

pid_t start_exec(const std::filesystem::path& binary, const std::filesystem::path& dir, bool pipe,
                 int stdout_fd, const std::map<std::string, std::string>& env,
                 const std::vector<std::string>& extra) {
  auto env_strings = environment(env);
  std::vector<char*> envp;
  for (auto& e : env_strings)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  auto bin = binary.string();
  auto folder = dir.string();
  auto log_path = (dir / "exec.log").string();
  std::vector<char*> argv{const_cast<char*>("cdui"), const_cast<char*>("exec")};
  if (pipe)
    argv.push_back(const_cast<char*>("--pipe"));
  argv.push_back(folder.data());
  auto args = extra;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  // Blocked across the fork, so the child starts with both blocked, atomically.
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGUSR1);
  sigset_t before;
  ::pthread_sigmask(SIG_BLOCK, &stops, &before);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid != 0) {
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    return pid < 0 ? -1 : pid;
  }
  ::setsid();
  // A server's run (--pipe) ends with the server, even one killed with -9 or one whose run prints
  // nothing for a while: the next server gives its card to other runs. (SIGKILL when the thread
  // that started it ends: the server's executor thread, which waits for it.) An agent's run goes
  // on without its agent, which adopts it when it starts again.
  if (pipe) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(127);
  }
  int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  int null = ::open("/dev/null", O_RDONLY);
  ::dup2(null, STDIN_FILENO);
  ::dup2(stdout_fd >= 0 ? stdout_fd : log, STDOUT_FILENO);
  ::dup2(log, STDERR_FILENO);
  ::close_range(3, ~0U, 0);
  ::execve(bin.c_str(), argv.data(), envp.data());
  ::_exit(127);
}

std::string process_exit_reason(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = ::sigabbrev_np(sig);
    return "the run's process was killed by signal " + std::to_string(sig)
           + (name ? std::string{" (SIG"} + name + ")" : std::string{}) + " before it finished";
  }
  return "the run's process exited with code " + std::to_string(WEXITSTATUS(status))
         + " before it finished";
}

std::optional<run_outcome> read_outcome(const std::filesystem::path& dir, const std::string& file) {
  std::ifstream in{dir / file};
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j["status"].is_string())
    return std::nullopt;
  run_outcome o;
  o.status = parse_run_status(j["status"].get<std::string>()).value_or(run_status::failed);
  o.error = j.value("error", std::string{});
  o.final_metrics = j["final_metrics"].is_object() ? json_text(j["final_metrics"]) : "{}";
  return o;
}

run_outcome execute_in_process(const std::filesystem::path& binary, const runtime::run_context& ctx,
                               const std::string& options_json,
                               const std::function<std::string()>& kill_reason) {
  nlohmann::json run{{"run_id", ctx.run_id},
                     {"seed", ctx.seed},
                     {"device", ctx.device.empty() ? "cpu" : ctx.device},
                     {"slot", ctx.slot},
                     {"num_threads", ctx.num_threads},
                     {"options", nlohmann::json::parse(options_json, nullptr, false)}};
  try {
    storage::write_file_atomic(ctx.run_dir / "run.json", json_text(run, 2) + "\n");
  } catch (const std::exception& e) {
    return {run_status::failed, std::string{"cannot prepare the run's process: "} + e.what(), "{}"};
  }
  std::error_code ec;  // an earlier attempt's outcome must not be read as this one's
  std::filesystem::remove(ctx.run_dir / "outcome.json", ec);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0)
    return {run_status::failed, "cannot start the run's process (pipe: " + std::string{std::strerror(errno)} + ")", "{}"};
  pid_t pid = start_exec(binary, ctx.run_dir, true, out[1], {});
  ::close(out[1]);
  if (pid < 0) {
    ::close(out[0]);
    return {run_status::failed, "cannot start the run's process (fork failed)", "{}"};
  }
  bool stop_sent = false;
  bool interrupt_sent = false;
  std::string killed_because;
  std::string pending;
  char buffer[65536];
  for (;;) {
    if (killed_because.empty()) {
      killed_because = kill_reason ? kill_reason() : std::string{};
      if (!killed_because.empty())
        ::kill(pid, SIGKILL);
    }
    if (!interrupt_sent && ctx.interrupt && ctx.interrupt->load()) {
      ::kill(pid, SIGUSR1);
      interrupt_sent = stop_sent = true;
    } else if (!stop_sent && ctx.stop && ctx.stop->load()) {
      ::kill(pid, SIGTERM);
      stop_sent = true;
    }
    pollfd fd{out[0], POLLIN, 0};
    int ready = ::poll(&fd, 1, flag_poll_ms);
    if (ready < 0 && errno != EINTR)
      break;
    if (ready <= 0)
      continue;
    auto n = ::read(out[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;  // the process has ended (or closed its stdout)
    if (!killed_because.empty())
      continue;  // the run has been ended: what it still says is dropped
    pending.append(buffer, static_cast<std::size_t>(n));
    emit_lines(pending, ctx);
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!killed_because.empty())
    return {run_status::interrupted, killed_because, "{}"};
  return read_outcome(ctx.run_dir).value_or(run_outcome{run_status::failed, process_exit_reason(status), "{}"});
}

} // namespace cdui::actors
