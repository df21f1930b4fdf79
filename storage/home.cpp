#include "storage/home.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdui::storage {

std::filesystem::path default_home() {
  if (const char* home = std::getenv("CODEFYUI_HOME"); home != nullptr && *home != '\0')
    return home;
  if (const char* user = std::getenv("HOME"); user != nullptr && *user != '\0')
    return std::filesystem::path{user} / ".cdui";
  return std::filesystem::current_path() / ".cdui";
}

void create_private_folders(const std::filesystem::path& folder) {
  std::error_code ec;
  if (folder.empty() || std::filesystem::is_directory(folder, ec))
    return;
  create_private_folders(folder.parent_path());
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create the folder " + folder.string() + ": "
                             + std::strerror(errno));
}

void make_private(const std::filesystem::path& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid()
      && (st.st_mode & 077) != 0)
    ::chmod(file.c_str(), 0600);
}

void prepare_home(const std::filesystem::path& home) {
  create_private_folders(home);
  struct stat st {};
  if (::stat(home.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::runtime_error("the home " + home.string() + " is not a folder");
  // A sticky folder (/tmp) is shared by design: closing it would break everyone else.
  if (st.st_uid == ::geteuid() && (st.st_mode & S_ISVTX) == 0 && (st.st_mode & 077) != 0)
    ::chmod(home.c_str(), 0700);
  for (const char* name : private_home_files)
    make_private(home / name);
}

std::string io_error_text(int error) {
  if (error == ENOSPC || error == EDQUOT)
    return std::string{"the disk is full ("} + std::strerror(error) + ")";
  return std::strerror(error);
}

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, bool private_file) {
  auto tmp = path;
  tmp += ".tmp" + std::to_string(::getpid());
  auto failed = [&](const std::string& verb, int error) {
    ::unlink(tmp.c_str());
    return std::runtime_error(verb + " " + path.string() + ": " + io_error_text(error));
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, private_file ? 0600 : 0666);
  if (fd < 0)
    throw failed("cannot create a new", errno);
  if (private_file)
    ::fchmod(fd, 0600);  // whatever the umask
  for (std::size_t done = 0; done < bytes.size();) {
    auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int error = n < 0 ? errno : EIO;
      ::close(fd);
      throw failed("cannot write", error);
    }
    done += static_cast<std::size_t>(n);
  }
  if (private_file && ::fsync(fd) != 0) {
    int error = errno;
    ::close(fd);
    throw failed("cannot write", error);
  }
  if (::close(fd) != 0)
    throw failed("cannot write", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    throw failed("cannot replace", errno);
}

} // namespace cdui::storage
