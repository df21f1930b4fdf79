#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "apps/run_command.hpp"
#include "messages/run_request.hpp"
#include "storage/server_files.hpp"

namespace httplib {
class Client;
class Result;
struct Response;
}

namespace cdui::apps {

/// A server running on a home: where it listens and the session token from its 0600 file.
struct server_connection {
  storage::server_address address;
  std::string token;
};

/// The server that holds `home` now, if one does and its server.json can be read.
[[nodiscard]] std::optional<server_connection> find_server(const std::filesystem::path& home);

/// A client of the server whose every request carries the session token: a server that listens
/// beyond loopback wants it for reads too.
[[nodiscard]] httplib::Client http_client(const server_connection& server);

/// The `detail` of an error answer, else its status and body.
[[nodiscard]] std::string detail_of(const httplib::Response& res);

/// "the server at URL did not answer (why)".
[[nodiscard]] std::string no_answer(const server_connection& server, const httplib::Result& result);

/// `cdui run` against a running server over HTTP: submits, then follows the run's events until it
/// ends (or returns at once with --detach). Ctrl+C and --timeout stop following; the run goes on.
[[nodiscard]] int remote_run(const server_connection& server, const run_request& request,
                             const run_command_options& options);

/// `cdui cancel RUN...`: asks the server to cancel each run (named by id, id prefix or name). Each
/// is tried; the exit code is the first failure's.
[[nodiscard]] int cancel_command(const std::vector<std::string>& runs);

/// What an operator does to a worker from the command line.
enum class worker_action { enroll, rekey, remove, drain, undrain, share, exclusive };

/// `cdui workers enroll|rekey|remove|drain|undrain NAME` and `cdui workers share|exclusive NAME
/// DEVICE`: the worker endpoints of the HTTP API. enroll and rekey print the command to run on the
/// worker's machine (`server_host`: the host it names, default: the one this command reached the
/// server by); share and exclusive set the worker's card `device` Shared by memory or Exclusive.
[[nodiscard]] int worker_action_command(worker_action action, const std::string& name,
                                        const std::string& server_host,
                                        const std::string& device = "");

} // namespace cdui::apps
