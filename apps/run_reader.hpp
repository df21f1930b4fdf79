#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "messages/run_event.hpp"
#include "messages/run_request.hpp"
#include "storage/run_store.hpp"

namespace cdui::apps {

struct server_connection;

/// Why a command could not do what it was asked, and the exit code it ends with.
struct cli_error {
  std::string message;
  int exit_code = 1;
};

template <class T>
using cli_result = std::variant<T, cli_error>;

/// Where the commands that look at runs (runs, show, logs, follow, cancel) read them: the home's
/// server over HTTP while one runs, else the home's store itself (runs of the embedded runtime,
/// or of a server that is stopped). Both give the same run objects and events.
class run_reader {
public:
  /// The reader of `home`: its server, else its store; nullptr when the home has no runs yet.
  [[nodiscard]] static cli_result<std::unique_ptr<run_reader>> open(const std::filesystem::path& home);

  /// The reader of a server already found.
  [[nodiscard]] static std::unique_ptr<run_reader> of_server(const server_connection& server);

  virtual ~run_reader() = default;

  /// Whether the runs are read from a running server (else from the store).
  [[nodiscard]] virtual bool from_server() const = 0;

  /// Runs newest first, optionally of one status.
  [[nodiscard]] virtual cli_result<storage::run_page> list(std::optional<run_status> status,
                                                           std::size_t limit, std::size_t offset) = 0;

  /// One run by its whole id.
  [[nodiscard]] virtual cli_result<run_info> get(const std::string& id) = 0;

  /// The run's events after `cursor`; when there are none yet, waits up to `wait_s` seconds for
  /// the first. `finished`: the run has ended and no events are left after these.
  [[nodiscard]] virtual cli_result<event_batch> events(const std::string& id, std::uint64_t cursor,
                                                       double wait_s) = 0;

  /// The run that `word` names: its id, a unique prefix of its id, or its name (find_run).
  [[nodiscard]] cli_result<run_info> find(const std::string& word);
};

} // namespace cdui::apps
