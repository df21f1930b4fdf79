#pragma once
// A full disk, for real: a tmpfs of a few MiB mounted on a test's folder, which a filler file fills
// up to its last byte. Mounting needs CAP_SYS_ADMIN (root, as the CI's sandbox runs tests);
// elsewhere mounted() is false and why_not() says why, for the test to report.

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace cdui::test {

class small_disk {
public:
  /// Mounts a tmpfs of `bytes` on `folder` (which exists), mode 0700.
  small_disk(std::filesystem::path folder, std::size_t bytes) : folder_(std::move(folder)) {
    auto options = "size=" + std::to_string(bytes) + ",mode=0700";
    if (::mount("tmpfs", folder_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0)
      mounted_ = true;
    else
      why_not_ = std::string{"cannot mount a tmpfs on "} + folder_.string() + ": " + std::strerror(errno);
  }
  /// Unmounted lazily: a process that still has a file open there keeps it until it closes it.
  ~small_disk() {
    if (mounted_)
      ::umount2(folder_.c_str(), MNT_DETACH);
  }
  small_disk(const small_disk&) = delete;
  small_disk& operator=(const small_disk&) = delete;

  [[nodiscard]] bool mounted() const { return mounted_; }
  [[nodiscard]] const std::string& why_not() const { return why_not_; }

  /// Writes a filler file until the disk refuses a byte more (ENOSPC); the bytes it holds.
  std::size_t fill() {
    std::ofstream out{filler(), std::ios::binary | std::ios::app};
    std::vector<char> block(4096, 'x');
    std::size_t written = 0;
    while (out.write(block.data(), static_cast<std::streamsize>(block.size())) && out.flush())
      written += block.size();
    out.clear();
    for (char c = 'x'; out.put(c) && out.flush();)
      ++written;
    return written;
  }

  /// Removes the filler: the disk has room again.
  void make_room() {
    std::error_code ec;
    std::filesystem::remove(filler(), ec);
  }

private:
  [[nodiscard]] std::filesystem::path filler() const { return folder_ / "filler"; }

  std::filesystem::path folder_;
  bool mounted_ = false;
  std::string why_not_;
};

} // namespace cdui::test
