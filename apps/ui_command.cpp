#include "apps/ui_command.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/client_commands.hpp"
#include "storage/home.hpp"

extern char** environ;

namespace cdui::apps {

namespace {

using nlohmann::json;

/// The program that opens a link in the user's browser, on the desktops cdui runs on.
constexpr const char* opener = "xdg-open";

/// The dashboard's base address: the server's, with a wildcard host (which a browser cannot open)
/// as loopback.
std::string dashboard_url(const storage::server_address& address) {
  auto host = address.host == "0.0.0.0" ? std::string{"127.0.0.1"} : address.host;
  return "http://" + host + ":" + std::to_string(address.port);
}

/// Whether an executable `name` is on PATH.
bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string rest = path != nullptr ? path : "";
  while (!rest.empty()) {
    auto colon = rest.find(':');
    auto folder = rest.substr(0, colon);
    rest = colon == std::string::npos ? "" : rest.substr(colon + 1);
    if (!folder.empty() && ::access((std::filesystem::path{folder} / name).c_str(), X_OK) == 0)
      return true;
  }
  return false;
}

/// Opens `link` with xdg-open: 0 when it did, else 1 with the reason on stderr.
int open_link(const std::string& link) {
  if (!on_path(opener)) {
    std::fprintf(stderr, "cdui ui: cannot open a browser: %s is not installed; open the link above "
                         "in a browser yourself\n", opener);
    return exit_run_failed;
  }
  pid_t pid = 0;
  std::string program = opener;
  char* argv[] = {program.data(), const_cast<char*>(link.c_str()), nullptr};
  int status = 0;
  if (::posix_spawnp(&pid, opener, nullptr, nullptr, argv, environ) != 0
      || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "cdui ui: %s could not open the link; open it in a browser yourself\n", opener);
    return exit_run_failed;
  }
  std::printf("opened the sign-in link with %s\n", opener);
  return exit_ok;
}

} // namespace

int ui_command(bool open) {
  auto home = storage::default_home();
  auto server = find_server(home);
  if (!server) {
    std::fprintf(stderr, "cdui: no cdui server is running on %s; start one with `cdui start`\n",
                 home.c_str());
    return exit_run_failed;
  }
  auto client = http_client(*server);
  auto res = client.Post("/api/ui/links", "", "application/json");
  if (!res) {
    std::fprintf(stderr, "cdui: %s\n", no_answer(*server, res).c_str());
    return exit_run_failed;
  }
  auto answer = json::parse(res->body, nullptr, false);
  if (res->status != 200 || !answer.is_object() || !answer["path"].is_string()) {
    std::fprintf(stderr, "cdui: the server refused a sign-in link: %s\n", detail_of(*res).c_str());
    return exit_run_failed;
  }
  auto base = dashboard_url(server->address);
  auto link = base + answer["path"].get<std::string>();
  auto minutes = answer.value("expires_in_s", 0) / 60;
  std::printf("dashboard: %s/\n", base.c_str());
  std::printf("sign in:   %s\n", link.c_str());
  std::printf("the link signs one browser in, once, within %d minutes; without it the dashboard is "
              "read-only\n", minutes);
  std::fflush(stdout);
  return open ? open_link(link) : exit_ok;
}

} // namespace cdui::apps
