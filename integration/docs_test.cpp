// The docs hold: every ```console block of README.md and docs/*.md is run, command by command, on
// a fresh home, and what each command prints must be the lines the docs show (testkit/transcript.hpp
// says how ids, numbers and "…" match); and the refusals http-api.md quotes are the server's words.
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <fstream>
#include <sstream>

#include "testkit/graphs.hpp"
#include "testkit/server_process.hpp"
#include "testkit/transcript.hpp"

using namespace std::chrono_literals;
using cdui::test::run_command;
using cdui::test::server_process;
using cdui::test::temp_home;
using nlohmann::json;

namespace {

const std::filesystem::path source_dir{CDUI_SOURCE_DIR};

/// The home the docs' sessions name (`export CODEFYUI_HOME=/tmp/cdui-tour`): the test runs them
/// on a temporary home of its own and writes this path for it, in commands and in output.
const std::string docs_home = "/tmp/cdui-tour";

std::string file_text(const std::filesystem::path& file) {
  std::ifstream in{file};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

/// Whatever a session leaves running on its home is killed by its own pid: the server, the agents
/// and their runs' processes.
struct session_guard {
  const temp_home& home;
  ~session_guard() {
    (void)cdui::test::signal_pid_in(home.path() / "server.json", SIGKILL);
    std::error_code ec;
    for (const auto& agent : std::filesystem::directory_iterator{home.path() / "agents", ec})
      (void)cdui::test::signal_pid_in(agent.path() / "agent.json", SIGKILL);
    for (auto pid : cdui::test::run_processes(home))
      ::kill(pid, SIGKILL);
  }
};

/// Runs the console blocks of `markdown` in order on one fresh home, each command with bash as a
/// reader would type it (the built `cdui` first on PATH, in the source folder, stderr with stdout).
/// One change: `cdui start` gets `--port 0`, so that a server already on the default port 8765 (a
/// person's own) cannot fail the test; ports are numbers, which match any number.
void check_sessions(const std::filesystem::path& markdown) {
  auto steps = cdui::test::console_steps(file_text(markdown));
  if (steps.empty())
    return;
  temp_home home;
  session_guard guard{home};
  auto bin = std::filesystem::path{CDUI_BINARY}.parent_path().string();
  const char* path = std::getenv("PATH");
  std::map<std::string, std::string> env{{"PATH", bin + ":" + (path != nullptr ? path : "/usr/bin:/bin")},
                                         {"CODEFYUI_HOME", (home.path() / "default").string()},
                                         {"CODEFYUI_SIM_DEVICES", ""}};
  auto name = markdown.filename().string();
  for (const auto& step : steps) {
    auto command = replaced(step.command, docs_home, home.path().string());
    BOOST_TEST_CONTEXT(name << ":" << step.line << ": $ " << step.command) {
      if (command.rfind("export ", 0) == 0) {
        auto eq = command.find('=');
        BOOST_REQUIRE(eq != std::string::npos);
        env[command.substr(7, eq - 7)] = command.substr(eq + 1);
        continue;
      }
      if (command == "cdui start" || command.rfind("cdui start ", 0) == 0)
        command += " --port 0";
      auto r = run_command({"/bin/bash", "-c", "cd '" + source_dir.string() + "' && { " + command + "\n} 2>&1"},
                           env, 5min);
      auto printed = cdui::test::lines_of(replaced(r.out, home.path().string(), docs_home));
      auto mismatch = cdui::test::transcript_mismatch(step.shown, printed);
      BOOST_TEST(!mismatch.has_value(), mismatch.value_or("") << "; it printed:\n" << r.out);
      BOOST_TEST(r.code < 128, "it ended by signal " << r.code - 128);
    }
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(docs_test)

BOOST_AUTO_TEST_CASE(the_readme_tour_and_the_tutorial_print_what_they_show) {
  std::vector<std::filesystem::path> files{source_dir / "README.md"};
  for (const auto& entry : std::filesystem::directory_iterator{source_dir / "docs"})
    if (entry.path().extension() == ".md")
      files.push_back(entry.path());
  std::sort(files.begin() + 1, files.end());
  std::size_t with_sessions = 0;
  for (const auto& file : files) {
    with_sessions += cdui::test::console_steps(file_text(file)).empty() ? 0 : 1;
    check_sessions(file);
  }
  BOOST_TEST(with_sessions >= 2u);  // the README's tour and docs/tutorial.md at least
}

BOOST_AUTO_TEST_CASE(the_refusals_http_api_md_quotes_are_the_servers) {
  temp_home home;
  server_process srv{home};
  auto docs = file_text(source_dir / "docs" / "http-api.md");
  auto graph = cdui::test::moons_graph_json(1);
  auto c = srv.client();
  struct ask {
    std::string method, path, body;
    bool token = true;
    httplib::Headers headers = {};
  };
  // A browser signed in through the dashboard's one-time link: its cookie.
  auto link = c.Post("/api/ui/links", srv.auth(), "", "application/json");
  BOOST_REQUIRE(link && link->status == 200);
  auto signed_in = c.Get(json::parse(link->body)["path"].get<std::string>());
  BOOST_REQUIRE(signed_in && signed_in->status == 303);
  auto cookie = signed_in->get_header_value("Set-Cookie");
  cookie = cookie.substr(0, cookie.find(';'));
  auto cookie_name = "cdui_session_" + std::to_string(srv.port());
  // A sweep of `graph` with this spec, ranked by the training loss.
  auto sweep_with = [&](const char* spec) {
    return json{{"graph", graph}, {"spec", json::parse(spec)},
                {"objective", json::parse(R"({"metric": "final_train_loss", "direction": "min"})")}}
      .dump();
  };
  // A study of `graph` over opt.lr, maximizing the accuracy, with these fields replaced.
  auto study_with = [&](const json& fields) {
    json body{{"graph", graph},
              {"space", json::parse(R"([{"node": "opt", "param": "lr", "min": 0.001, "max": 0.1, "scale": "log"}])")},
              {"objective", json::parse(R"({"metric": "val_accuracy", "direction": "max"})")},
              {"budget", json::parse(R"({"trials": 2})")}};
    for (const auto& [field, value] : fields.items())
      if (value.is_null())
        body.erase(field);
      else
        body[field] = value;
    return body.dump();
  };
  const std::vector<ask> asks{
    {"GET", "/api/runs?status=done", ""},
    {"GET", "/api/runs?limit=x", ""},
    {"GET", "/api/runs?worker=-bad", ""},
    {"GET", "/api/runs?device=a/b", ""},
    {"GET", "/api/runs/nope", ""},
    {"GET", "/api/runs/nope/events", ""},
    {"GET", "/api/runs/nope/events?cursor=-1", ""},
    {"GET", "/api/runs/nope/events?wait=-2", ""},
    {"POST", "/api/runs", json{{"graph", graph}}.dump(), false},
    {"POST", "/api/runs", "{", true},
    {"POST", "/api/runs", "[1,2]"},
    {"POST", "/api/runs", "{}"},
    {"POST", "/api/runs", R"({"graph": 1})"},
    {"POST", "/api/runs", json{{"graph", graph}, {"extra", 1}}.dump()},
    {"POST", "/api/runs", R"({"graph": {}})"},
    {"POST", "/api/runs", json{{"graph", graph}, {"name", 1}}.dump()},
    {"POST", "/api/runs", json{{"graph", graph}, {"options", 1}}.dump()},
    {"POST", "/api/runs", json{{"graph", graph}, {"options", {{"target", {{"worker", "nobody"}}}}}}.dump()},
    {"PUT", "/api/runs", ""},
    {"POST", "/api/estimate", json{{"graph", graph}, {"parameters", 5}}.dump()},
    {"POST", "/api/estimate", json{{"graph", graph}, {"cards", 0}}.dump()},
    {"POST", "/api/workers/nobody/drain", ""},
    {"POST", "/api/workers/enroll", R"({"name": "../escape"})"},
    {"POST", "/api/workers/enroll", R"({"host": "x"})"},
    {"GET", "/api/sweeps?limit=x", ""},
    {"GET", "/api/workers?enrolled_limit=0", ""},
    {"GET", "/api/sweeps/nope", ""},
    {"POST", "/api/sweeps/nope/cancel", ""},
    {"POST", "/api/sweeps", json{{"graph", graph}}.dump()},
    {"POST", "/api/sweeps", sweep_with(R"({"method": "grid", "params": [{"node": "opt", "param": "lr", "min": 0.1, "max": 1, "scale": "cubic"}]})")},
    {"POST", "/api/sweeps", sweep_with(R"({"method": "grid", "params": [{"node": "optimizer", "param": "lr", "values": [1]}]})")},
    {"POST", "/api/sweeps", sweep_with(R"({"method": "grid", "params": [{"node": "opt", "param": "lr", "min": 0.1, "max": 1, "count": 1001}]})")},
    {"GET", "/api/studies/nope", ""},
    {"POST", "/api/studies/nope/cancel", ""},
    {"POST", "/api/studies", study_with({{"budget", nullptr}})},
    {"POST", "/api/studies", study_with({{"budget", {{"trials", 0}}}})},
    {"POST", "/api/studies", study_with({{"budget", {{"trials", 1001}}}})},
    {"POST", "/api/studies", study_with({{"space", json::parse(R"([{"node": "optimizer", "param": "lr", "values": [1]}])")}})},
    {"POST", "/api/studies", study_with({{"options", {{"lane", "interactive"}}}})},
    {"POST", "/api/runs/nope/cancel", "", false, {{"X-CodefyUI-CSRF", "none"}}},
    {"POST", "/api/runs/nope/cancel", "", false, {{"Cookie", cookie}}},
    {"POST", "/api/runs/nope/cancel", "", false,
     {{"Cookie", cookie_name + "=" + std::string(64, 'f')}, {"X-CodefyUI-CSRF", "none"}}},
    {"POST", "/api/ui/links", "", false, {{"Cookie", cookie}}},
    {"DELETE", "/api/ui/session", "", false, {{"Cookie", cookie}}},
    {"GET", "/ui/x.js", ""},
  };
  for (const auto& a : asks) {
    auto headers = a.headers;
    if (a.token)
      headers.merge(srv.auth());
    httplib::Request req;
    req.method = a.method;
    req.path = a.path;
    req.headers = headers;
    req.body = a.body;
    if (!a.body.empty())
      req.set_header("Content-Type", "application/json");
    auto res = c.send(req);
    BOOST_TEST_CONTEXT(a.method << " " << a.path << " " << a.body.substr(0, 60)) {
      BOOST_REQUIRE(res);
      BOOST_TEST(res->status >= 400);
      auto detail = json::parse(res->body, nullptr, false).value("detail", std::string{});
      BOOST_TEST(!detail.empty(), res->body);
      // As it is, or in a table cell (where '|' is written '\|').
      BOOST_TEST((docs.find(detail) != std::string::npos
                  || docs.find(replaced(detail, "|", "\\|")) != std::string::npos),
                 "http-api.md does not quote " << res->status << " " << detail);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
