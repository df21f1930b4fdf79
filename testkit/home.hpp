#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include <unistd.h>

namespace cdui::test {

/// A file's bytes; empty when it cannot be read (not there yet, say).
inline std::string file_text(const std::filesystem::path& file) {
  std::ifstream in{file, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, {}};
}

/// A fresh temporary $CODEFYUI_HOME, removed with everything in it when the test ends.
class temp_home {
public:
  temp_home() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path()
            / ("cdui-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  /// Removed unless CDUI_TEST_KEEP_HOMES is set (to read a failed test's logs afterwards).
  ~temp_home() {
    if (std::getenv("CDUI_TEST_KEEP_HOMES") != nullptr)
      return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_home(const temp_home&) = delete;
  temp_home& operator=(const temp_home&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
};

/// An empty folder `cdui-bench-WHAT-PID` under `parent`, for a benchmark that removes it itself
/// once it succeeded (a failed one leaves it, with its logs).
inline std::filesystem::path fresh_temp_dir(const std::string& what,
                                            const std::filesystem::path& parent
                                            = std::filesystem::temp_directory_path()) {
  auto dir = parent / ("cdui-bench-" + what + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

} // namespace cdui::test
