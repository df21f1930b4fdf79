#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace cdui::storage {

/// What $CODEFYUI_HOME/server.json says about the running server.
struct server_address {
  std::string host;
  int port = 0;
  int pid = 0;
  /// The ZeroMQ endpoint agents connect to; empty until the server offers one.
  std::string zmq;
  /// The server's CURVE public key (Z85) when the endpoint is encrypted; empty otherwise.
  std::string zmq_public_key;
  [[nodiscard]] std::string http_url() const {
    return "http://" + host + ":" + std::to_string(port);
  }
};

[[nodiscard]] std::filesystem::path server_json_path(const std::filesystem::path& home);
[[nodiscard]] std::filesystem::path token_path(const std::filesystem::path& home);

/// Writes server.json atomically (temp name, then rename), mode 0600.
void write_server_json(const std::filesystem::path& home, const server_address& address);
/// nullopt when the file is missing or unreadable.
[[nodiscard]] std::optional<server_address> read_server_json(const std::filesystem::path& home);

/// Creates a fresh random session token in a file only its owner can read (mode 0600) and returns
/// it. Throws std::runtime_error naming the file when it cannot.
std::string create_token(const std::filesystem::path& home);
[[nodiscard]] std::optional<std::string> read_token(const std::filesystem::path& home);

/// A starting server's new session token (create_token), written before the server binds, so that a
/// same-host agent never meets the new server with the old token. Unless keep() is called, the
/// destructor puts the token file back as it was (the previous file, or none): a start that fails,
/// on a busy ZeroMQ port say, leaves the home's token file as it found it.
class new_session_token {
public:
  /// Throws std::runtime_error naming the file when the token cannot be written.
  explicit new_session_token(const std::filesystem::path& home);
  ~new_session_token();
  new_session_token(const new_session_token&) = delete;
  new_session_token& operator=(const new_session_token&) = delete;

  [[nodiscard]] const std::string& token() const { return token_; }
  /// The server runs: the new token stays.
  void keep() { kept_ = true; }

private:
  std::filesystem::path home_;
  bool had_file_ = false;
  std::optional<std::string> previous_;  // the previous file's bytes, when it could be read
  std::string token_;
  bool kept_ = false;
};

/// A lock on $CODEFYUI_HOME/server.lock (flock), released by the destructor or when the process
/// dies, even by kill -9. A server holds it exclusively for its lifetime; an embedded `cdui run`
/// holds it shared, so that no server starts on a home whose runs another process executes.
class home_lock {
public:
  enum class mode { exclusive, shared };
  /// nullopt when another process holds a conflicting lock. Prepares the home first (creates
  /// it 0700, its own files 0600: prepare_home in storage/home.hpp).
  [[nodiscard]] static std::optional<home_lock> try_lock(const std::filesystem::path& home, mode m);
  /// The same lock on any file (an agent's agent.lock), created if missing, with the missing
  /// folders above it (0700).
  [[nodiscard]] static std::optional<home_lock> try_lock_file(const std::filesystem::path& file,
                                                              mode m);
  /// Whether a server holds the home's lock now (a probe that takes and drops a shared lock).
  [[nodiscard]] static bool server_running(const std::filesystem::path& home);

  home_lock(home_lock&& other) noexcept;
  home_lock& operator=(home_lock&& other) noexcept;
  home_lock(const home_lock&) = delete;
  home_lock& operator=(const home_lock&) = delete;
  ~home_lock();

private:
  explicit home_lock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

} // namespace cdui::storage
