#include "runtime/file_access.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "messages/text.hpp"
#include "runtime/engine.hpp"

namespace cdui::runtime {

namespace fs = std::filesystem;

namespace {

/// Paths are long; a message keeps this many characters of one.
constexpr std::size_t shown_characters = 200;

/// Files that make a folder a cdui home (a server's, an embedded run's or an agent's).
constexpr const char* home_markers[] = {"cdui.db", "server.lock", "session.token"};

/// `p` without `.`, `..` and a trailing separator.
fs::path normal(const fs::path& p) {
  auto n = p.lexically_normal();
  if (!n.has_filename() && n.has_relative_path())
    n = n.parent_path();
  return n;
}

/// `p` with every symbolic link of the part that exists resolved; when even that cannot be
/// read (a folder this user may not search), `p` as written.
fs::path real_path(const fs::path& p) {
  std::error_code ec;
  auto real = fs::weakly_canonical(p, ec);
  return normal(ec ? p : real);
}

bool inside(const fs::path& p, const fs::path& folder) {
  return std::mismatch(folder.begin(), folder.end(), p.begin(), p.end()).first == folder.end();
}

bool under_any(const fs::path& p, const std::vector<fs::path>& roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const fs::path& r) { return inside(p, r); });
}

bool is_cdui_home(const fs::path& folder) {
  std::error_code ec;
  return std::any_of(std::begin(home_markers), std::end(home_markers),
                     [&](const char* marker) { return fs::exists(folder / marker, ec); });
}

/// Whether `p`, inside home `home`, is in the checkpoints/ folder of one of its runs (a server's
/// runs/<id>/checkpoints/, or an agent's agents/<name>/runs/<id>/checkpoints/).
bool in_a_runs_checkpoints(const fs::path& p, const fs::path& home) {
  std::vector<std::string> parts;
  for (const auto& part : p.lexically_relative(home))
    parts.push_back(part.string());
  auto at = [&](std::size_t i, const char* name) { return i < parts.size() && parts[i] == name; };
  return (at(0, "runs") && at(2, "checkpoints") && parts.size() > 3)
         || (at(0, "agents") && at(2, "runs") && at(4, "checkpoints") && parts.size() > 5);
}

std::vector<fs::path> real_paths(const std::vector<fs::path>& paths) {
  std::vector<fs::path> out;
  for (const auto& p : paths)
    out.push_back(real_path(p));
  return out;
}

/// "CODEFYUI_DATA_ROOTS is '/a:/b'" or "... is not set", for a refusal.
std::string describe(const char* variable) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0')
    return std::string{variable} + " is not set";
  return std::string{variable} + " is " + text::quoted(value, shown_characters);
}

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode))
    return "a folder";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// The path the kernel holds for an open descriptor; empty when /proc cannot say.
fs::path held_path(int fd) {
  char buf[4096];
  auto link = "/proc/self/fd/" + std::to_string(fd);
  auto n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0 || static_cast<std::size_t>(n) == sizeof buf - 1)
    return {};
  return fs::path{std::string{buf, static_cast<std::size_t>(n)}};
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    auto n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

/// A temporary name that no other write of this process uses at the same time.
std::string temporary_name(const fs::path& name) {
  static std::atomic<unsigned> count{0};
  return name.string() + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(++count);
}

/// "param 'path' ", to start a sentence about the param's value: "param 'path' '/x' is a FIFO".
std::string prefix(std::string_view param) {
  return "param '" + std::string{param} + "' ";
}

/// "param 'path': ", to start a sentence about what happened: "param 'path': cannot open '/x'".
std::string about(std::string_view param) {
  return "param '" + std::string{param} + "': ";
}

} // namespace

std::string quoted_path(const fs::path& p) {
  return text::quoted(p.string(), shown_characters);
}

std::vector<fs::path> parse_roots(std::string_view text) {
  std::vector<fs::path> roots;
  while (true) {
    auto colon = text.find(':');
    fs::path entry{std::string{text.substr(0, colon)}};
    if (entry.is_absolute())
      roots.push_back(normal(entry));
    if (colon == std::string_view::npos)
      return roots;
    text.remove_prefix(colon + 1);
  }
}

bool leaves_its_folder(const fs::path& relative) {
  auto n = relative.lexically_normal();
  return !n.empty() && *n.begin() == "..";
}

std::string refusal_by_text(file_use use, std::string_view param, const std::string& path) {
  if (path.empty())
    return prefix(param) + "is empty; give a file name";
  // The system would end the name at the NUL: "ok\0.pt" wrote "ok" while the run said "ok\0.pt".
  if (auto nul = path.find('\0'); nul != std::string::npos)
    return prefix(param) + quoted_path(fs::path{path}) + " holds a NUL byte (byte " + std::to_string(nul + 1)
           + "): no file name can";
  fs::path p{path};
  if (!p.is_relative() || !leaves_its_folder(p))
    return {};
  return prefix(param) + quoted_path(p) + " leaves "
         + (use == file_use::data ? "the data roots" : "the run's checkpoints/ folder")
         + ": a relative path must stay inside it"
         + (use == file_use::output ? std::string{" (to write elsewhere, give an absolute path under "
                                                  "a folder of "} + output_roots_variable + ")"
                                    : std::string{});
}

file_roots file_roots::from_environment() {
  auto read = [](const char* variable) {
    const char* value = std::getenv(variable);
    return parse_roots(value == nullptr ? "" : value);
  };
  return {read(output_roots_variable), read(data_roots_variable)};
}

file_access::file_access(fs::path run_dir, fs::path home, file_roots roots)
  : run_dir_(real_path(fs::absolute(run_dir))),
    checkpoints_(run_dir_ / "checkpoints"),
    roots_{real_paths(roots.output), real_paths(roots.data)} {
  if (!home.empty())
    homes_.push_back(real_path(fs::absolute(home)));
  // <home>/runs/<id>, or an agent's <home>/agents/<name>/runs/<id>.
  auto runs = run_dir_.parent_path();
  if (runs.filename() == "runs") {
    homes_.push_back(runs.parent_path());
    auto agents = runs.parent_path().parent_path();
    if (agents.filename() == "agents")
      homes_.push_back(agents.parent_path());
  }
  roots_.data.push_back(real_path(builtin_datasets_root));
}

file_access file_access::for_run(const run_context& run) {
  return {run.run_dir, run.home, file_roots::from_environment()};
}

fs::path file_access::home_holding(const fs::path& real) const {
  for (const auto& home : homes_)
    if (inside(real, home))
      return home;
  for (auto folder = real.parent_path(); !folder.empty(); folder = folder.parent_path()) {
    if (is_cdui_home(folder))
      return folder;
    if (folder == folder.root_path())
      break;
  }
  return {};
}

file_decision file_access::resolve(file_use use, std::string_view param,
                                   const std::string& path) const {
  file_decision d;
  d.refusal = refusal_by_text(use, param, path);
  if (!d.allowed())
    return d;
  fs::path p{path};
  if (p.is_relative()) {
    if (use == file_use::data) {
      std::error_code ec;
      auto found = std::find_if(roots_.data.begin(), roots_.data.end(),
                                [&](const fs::path& root) { return fs::exists(root / p, ec); });
      if (found == roots_.data.end()) {
        d.shown = p;
        d.refusal = about(param) + "cannot open " + quoted_path(p) + ": no such file under the data "
                    "roots (a relative path is looked up under each folder of "
                    + data_roots_variable + ", then under " + builtin_datasets_root + "; "
                    + describe(data_roots_variable) + ")";
        return d;
      }
      d.shown = normal(*found / p);
    } else {
      d.shown = normal(checkpoints_ / p);
    }
  } else {
    d.shown = normal(p);
  }
  d.real = real_path(d.shown);
  d.refusal = check_place(use, param, d);
  return d;
}

std::string file_access::check_place(file_use use, std::string_view param,
                                     const file_decision& d) const {
  const auto& real = d.real;
  auto what = prefix(param) + quoted_path(d.shown);
  if (use == file_use::output) {
    if (inside(real, checkpoints_))
      return {};
    if (auto home = home_holding(real); !home.empty())
      return what + " is inside cdui's home " + quoted_path(home)
             + ", where a run writes only into its own checkpoints/ folder";
    if (under_any(real, roots_.output))
      return {};
    return what + " is outside the run's checkpoints/ folder and under no output root: an "
           "absolute path is written only under a folder of " + output_roots_variable
           + ", which the operator sets where the run executes (" + describe(output_roots_variable)
           + ")";
  }
  if (inside(real, run_dir_))
    return {};
  if (auto home = home_holding(real); !home.empty()) {
    if (in_a_runs_checkpoints(real, home))
      return {};
    return what + " is inside cdui's home " + quoted_path(home)
           + ", where a run reads only its own folder and the checkpoints/ folders of runs";
  }
  if (under_any(real, roots_.data))
    return {};
  if (use == file_use::checkpoint && under_any(real, roots_.output))
    return {};
  return what + " is under no data root: a run reads files only under the folders of "
         + data_roots_variable + ", which the operator sets where the run executes, and under "
         + builtin_datasets_root + (use == file_use::checkpoint ? std::string{" and "} + output_roots_variable : "")
         + " (" + describe(data_roots_variable) + ")";
}

file_decision file_access::decide(file_use use, std::string_view param,
                                  const std::string& path) const {
  auto d = resolve(use, param, path);
  if (!d.allowed())
    return d;
  struct stat st {};
  bool exists = ::stat(d.real.c_str(), &st) == 0;
  int error = exists ? 0 : errno;
  if (use == file_use::output) {
    if (exists && S_ISDIR(st.st_mode))
      d.refusal = prefix(param) + quoted_path(d.shown) + " is a folder; give a file name";
    return d;
  }
  if (!exists)
    d.refusal = about(param) + (use == file_use::checkpoint ? "no checkpoint at " : "cannot open ")
                + quoted_path(d.shown) + (error == ENOENT ? "" : std::string{": "} + std::strerror(error));
  else if (!S_ISREG(st.st_mode))
    d.refusal = prefix(param) + quoted_path(d.shown) + " is " + kind_of(st.st_mode)
                + "; a run reads regular files only";
  return d;
}

input_file file_access::open(file_use use, std::string_view param, const std::string& path) const {
  input_file f;
  f.decision_ = decide(use, param, path);
  auto& d = f.decision_;
  if (!d.allowed())
    return f;
  // O_NONBLOCK: a FIFO put there since the check opens at once instead of waiting for a writer;
  // O_NOFOLLOW: a link put there since the check is not followed.
  int fd = ::open(d.real.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    d.refusal = about(param) + "cannot open " + quoted_path(d.shown) + ": " + std::strerror(errno);
    return f;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    d.refusal = prefix(param) + quoted_path(d.shown) + " is " + kind_of(st.st_mode)
                + "; a run reads regular files only";
    return f;
  }
  // A folder on the way may have become a link since the check: judge the file actually opened.
  if (auto held = held_path(fd); !held.empty() && held != d.real) {
    auto again = check_place(use, param, {d.shown, held, {}});
    if (!again.empty()) {
      ::close(fd);
      d.refusal = again;
      return f;
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  f.fd_ = fd;
  return f;
}

file_decision file_access::write(std::string_view param, const std::string& path,
                                 std::string_view bytes) const {
  auto d = decide(file_use::output, param, path);
  if (!d.allowed())
    return d;
  auto folder = d.real.parent_path();
  auto name = d.real.filename();
  std::error_code ec;
  fs::create_directories(folder, ec);
  int dir = ec ? -1 : ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    d.refusal = about(param) + "cannot create the folder " + quoted_path(d.shown.parent_path()) + ": "
                + (ec ? ec.message() : std::strerror(errno));
    return d;
  }
  // A folder on the way may have become a link since the check: judge the folder actually opened.
  if (auto held = held_path(dir); !held.empty() && held != folder) {
    d.refusal = check_place(file_use::output, param, {d.shown, held / name, {}});
    if (!d.allowed()) {
      ::close(dir);
      return d;
    }
  }
  auto tmp = temporary_name(name);
  int fd = ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  bool written = fd >= 0 && write_all(fd, bytes) && ::fsync(fd) == 0;
  int error = errno;
  if (fd >= 0)
    ::close(fd);
  if (written && ::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
    written = false;
    error = errno;
  }
  if (!written) {
    ::unlinkat(dir, tmp.c_str(), 0);
    d.refusal = about(param) + "cannot write " + quoted_path(d.shown) + ": " + std::strerror(error);
  }
  ::close(dir);
  return d;
}

} // namespace cdui::runtime
