#pragma once

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

namespace cdui::test {

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

} // namespace cdui::test
