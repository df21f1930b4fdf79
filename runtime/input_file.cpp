// A file a node reads, opened once file_access allowed it: its descriptor, and a stream over it.
#include "runtime/file_access.hpp"

#include <ext/stdio_filebuf.h>
#include <unistd.h>

namespace cdui::runtime {

struct input_file::streaming {
  explicit streaming(int fd) : buffer(fd, std::ios::in | std::ios::binary), in(&buffer) {}
  __gnu_cxx::stdio_filebuf<char> buffer;  // closes the descriptor when it goes
  std::istream in;
};

input_file::input_file() = default;

input_file::input_file(input_file&& other) noexcept
  : decision_(std::move(other.decision_)), fd_(other.fd_), stream_(std::move(other.stream_)) {
  other.fd_ = -1;
}

input_file& input_file::operator=(input_file&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0 && !stream_)
      ::close(fd_);
    decision_ = std::move(other.decision_);
    fd_ = other.fd_;
    stream_ = std::move(other.stream_);
    other.fd_ = -1;
  }
  return *this;
}

input_file::~input_file() {
  if (fd_ >= 0 && !stream_)
    ::close(fd_);
}

std::string input_file::quoted() const {
  return quoted_path(decision_.shown);
}

std::istream& input_file::stream() {
  if (!stream_)
    stream_ = std::make_unique<streaming>(fd_);
  return stream_->in;
}

int input_file::release() {
  auto fd = fd_;
  fd_ = -1;
  return fd;
}

} // namespace cdui::runtime
