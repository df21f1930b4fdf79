#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace cdui::apps {

/// The HTTP port `cdui start` listens on when not told otherwise.
inline constexpr int default_port = 8765;

struct start_options {
  std::string host = "127.0.0.1";
  int port = default_port;  // 0: any free port (server.json says which)
  /// The port agents connect to over ZeroMQ; -1: the HTTP port + 1, or any free port with port 0.
  int zmq_port = -1;
  bool foreground = false;
  /// The largest request body in MiB; unset: $CODEFYUI_HTTP_MAX_BODY_MB, else 16.
  std::optional<std::size_t> max_body_mb;
  /// Where queued local runs execute: "thread" (in the server's process) or "process"
  /// (a `cdui exec` process each); empty: $CODEFYUI_ISOLATION, else thread.
  std::string isolation;
};

/// `cdui start`: the server, in the background (or attached with --foreground).
[[nodiscard]] int start_command(const start_options& options);

/// `cdui stop`: asks the server to stop gracefully and waits for it.
[[nodiscard]] int stop_command(int timeout_seconds);

/// `cdui status`: whether a server runs on this home, where, and its queues.
[[nodiscard]] int status_command();

} // namespace cdui::apps
