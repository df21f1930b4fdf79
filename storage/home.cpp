#include "storage/home.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace cdui::storage {

std::filesystem::path default_home() {
  if (const char* home = std::getenv("CODEFYUI_HOME"); home != nullptr && *home != '\0')
    return home;
  if (const char* user = std::getenv("HOME"); user != nullptr && *user != '\0')
    return std::filesystem::path{user} / ".cdui";
  return std::filesystem::current_path() / ".cdui";
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
