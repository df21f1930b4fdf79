#include "storage/server_files.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "messages/json_text.hpp"
#include "storage/credentials.hpp"
#include "storage/home.hpp"

namespace cdui::storage {

std::filesystem::path server_json_path(const std::filesystem::path& home) {
  return home / "server.json";
}

std::filesystem::path token_path(const std::filesystem::path& home) {
  return home / "session.token";
}

void write_server_json(const std::filesystem::path& home, const server_address& a) {
  nlohmann::json j{{"http", a.http_url()},
                   {"host", a.host},
                   {"port", a.port},
                   {"pid", a.pid},
                   {"zmq", nullptr},
                   {"zmq_public_key", nullptr},
                   {"token_file", token_path(home).string()}};
  if (!a.zmq.empty())
    j["zmq"] = a.zmq;
  if (!a.zmq_public_key.empty())
    j["zmq_public_key"] = a.zmq_public_key;
  write_private_file(server_json_path(home), json_text(j, 2) + "\n");
}

std::optional<server_address> read_server_json(const std::filesystem::path& home) {
  std::ifstream in{server_json_path(home)};
  if (!in)
    return std::nullopt;
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j["host"].is_string() || !j["port"].is_number_integer())
    return std::nullopt;
  server_address a;
  a.host = j["host"].get<std::string>();
  a.port = j["port"].get<int>();
  a.pid = j.value("pid", 0);
  if (j["zmq"].is_string())
    a.zmq = j["zmq"].get<std::string>();
  if (j["zmq_public_key"].is_string())
    a.zmq_public_key = j["zmq_public_key"].get<std::string>();
  return a;
}

std::string create_token(const std::filesystem::path& home) {
  auto token = random_secret();
  write_private_file(token_path(home), token + "\n");  // its error names the file and why
  return token;
}

std::optional<std::string> read_token(const std::filesystem::path& home) {
  return read_first_line(token_path(home));
}

new_session_token::new_session_token(const std::filesystem::path& home) : home_(home) {
  had_file_ = std::filesystem::exists(token_path(home));
  if (had_file_) {
    std::ifstream in{token_path(home), std::ios::binary};
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (in)
      previous_ = bytes.str();
  }
  token_ = create_token(home);
}

new_session_token::~new_session_token() {
  if (kept_)
    return;
  try {
    if (previous_) {
      write_private_file(token_path(home_), *previous_);
    } else if (!had_file_) {
      std::error_code ec;
      std::filesystem::remove(token_path(home_), ec);
    }
    // A previous file that could not be read cannot be put back: the new one stays.
  } catch (const std::exception&) {
    // The start failed already; a token file left new only makes an old token stale.
  }
}

std::optional<home_lock> home_lock::try_lock(const std::filesystem::path& home, mode m) {
  prepare_home(home);
  return try_lock_file(home / "server.lock", m);
}

std::optional<home_lock> home_lock::try_lock_file(const std::filesystem::path& file, mode m) {
  create_private_folders(file.parent_path());
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    throw std::runtime_error("cannot open " + file.string());
  if (::flock(fd, (m == mode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  return home_lock{fd};
}

bool home_lock::server_running(const std::filesystem::path& home) {
  if (!std::filesystem::exists(home / "server.lock") || !std::filesystem::exists(server_json_path(home)))
    return false;
  // A server holds the lock exclusively: a shared lock fails exactly while one runs.
  return !try_lock_file(home / "server.lock", mode::shared).has_value();
}

home_lock::home_lock(home_lock&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

home_lock& home_lock::operator=(home_lock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

home_lock::~home_lock() {
  if (fd_ >= 0)
    ::close(fd_);  // closing the descriptor releases the flock
}

} // namespace cdui::storage
