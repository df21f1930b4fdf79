#include "storage/home.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

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

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes) {
  auto tmp = path;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out{tmp, std::ios::binary | std::ios::trunc};
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out)
      throw std::runtime_error("cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw std::runtime_error("cannot rename " + tmp.string() + " to " + path.string());
  }
}

} // namespace cdui::storage
