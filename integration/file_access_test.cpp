// Issue 10, section 2, through the real server: a saver cannot reach the home's files, the home
// and its files are private, and a damaged store stops the start.
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <fstream>

#include <sys/stat.h>

#include "testkit/server_process.hpp"
#include "testkit/graphs.hpp"

using namespace std::chrono_literals;
using cdui::test::server_process;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// A short moons run (testkit/graphs.hpp) whose trained model a ModelSaver "save" writes to `path`.
json saved_to(const std::string& path) {
  json graph = cdui::test::moons_graph_json(1, 2, 16, "sim:0");
  graph["nodes"].push_back({{"id", "save"}, {"type", "ModelSaver"}, {"params", {{"path", path}}}});
  graph["edges"].push_back({{"from", "loop.model"}, {"to", "save.model"}});
  return {{"graph", graph}, {"options", {{"seed", 1}}}};
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat(p.c_str(), &st) == 0, p);
  return st.st_mode & 07777;
}

std::string first_bytes(const fs::path& p, std::size_t n) {
  std::ifstream in{p, std::ios::binary};
  std::string bytes(n, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return bytes;
}

/// Overwrites the home's store as a saver once did: with the bytes of a torch archive.
void damage_store(const fs::path& home) {
  std::ofstream{home / "cdui.db", std::ios::binary | std::ios::trunc}
    << "PK\x03\x04" << std::string(4096, '\x01');
}

} // namespace

BOOST_AUTO_TEST_SUITE(file_access_test)

BOOST_AUTO_TEST_CASE(a_saver_aimed_at_the_store_is_refused_and_the_server_goes_on) {
  cdui::test::temp_home home;
  // Even an output root that holds the home does not open the home's files.
  server_process srv{home, {{"CODEFYUI_OUTPUT_ROOTS", home.path().parent_path().string()}}};
  auto store_header = first_bytes(home.path() / "cdui.db", 16);
  BOOST_TEST_REQUIRE(store_header == std::string("SQLite format 3\0", 16));

  // Relative: refused by validation, before anything runs.
  auto climbing = srv.submit(saved_to("../../../cdui.db"));
  BOOST_TEST_REQUIRE(climbing);
  BOOST_TEST(climbing->status == 400);
  BOOST_TEST(climbing->body.find("node 'save' (ModelSaver): param 'path' '../../../cdui.db' leaves "
                                 "the run's checkpoints/ folder") != std::string::npos,
             climbing->body);

  // Absolute: the run fails when the saver runs, naming the node, the param and the path.
  for (const char* name : {"cdui.db", "session.token"}) {
    auto target = (home.path() / name).string();
    auto id = srv.submit_ok(saved_to(target));
    auto run = srv.wait_final(id);
    BOOST_TEST(run["status"] == "failed");
    auto error = run["error"].get<std::string>();
    BOOST_TEST(error.find("Node ModelSaver (save) failed: param 'path' '" + target
                          + "' is inside cdui's home") == 0u, error);
  }
  BOOST_TEST(first_bytes(home.path() / "cdui.db", 16) == store_header);

  // The server still lists runs and takes new ones.
  auto listed = srv.get_json("/api/runs");
  BOOST_TEST(listed["total"] == 2);
  auto id = srv.submit_ok(saved_to("model.pt"));
  auto run = srv.wait_final(id);
  BOOST_TEST(run["status"] == "succeeded", run.dump());
  BOOST_TEST(fs::exists(home.path() / "runs" / id / "checkpoints" / "model.pt"));
}

BOOST_AUTO_TEST_CASE(the_home_and_its_files_are_the_owner_s_alone_after_a_start) {
  cdui::test::temp_home home;
  ::chmod(home.path().c_str(), 0755);  // as an earlier cdui left it
  {
    std::ofstream log{home.path() / "server.log"};
  }
  ::chmod((home.path() / "server.log").c_str(), 0644);
  server_process srv{home};
  auto id = srv.submit_ok(saved_to("model.pt"));
  BOOST_TEST(srv.wait_final(id)["status"] == "succeeded");
  BOOST_TEST(mode_of(home.path()) == 0700u);
  for (const char* name : {"cdui.db", "cdui.db-wal", "cdui.db-shm", "server.log", "server.json",
                           "session.token", "server.lock"})
    BOOST_TEST(mode_of(home.path() / name) == 0600u, name);
  // What runs write is private too (the server's umask is 077).
  BOOST_TEST((mode_of(home.path() / "runs" / id) & 077) == 0u);
  BOOST_TEST((mode_of(home.path() / "runs" / id / "checkpoints" / "model.pt") & 077) == 0u);
}

BOOST_AUTO_TEST_CASE(a_damaged_store_stops_the_start_naming_the_file) {
  cdui::test::temp_home home;
  cdui::test::background_server_guard guard{home.path()};  // a server a failing test left
  damage_store(home.path());
  auto store = (home.path() / "cdui.db").string();
  std::map<std::string, std::string> env{{"CODEFYUI_HOME", home.path().string()},
                                         {"CODEFYUI_SIM_DEVICES", "1x1GiB"}};

  cdui::test::process foreground{{CDUI_BINARY, "start", "--foreground", "--port", "0"}, env};
  auto code = foreground.wait_for(60s);
  BOOST_TEST_REQUIRE(code.has_value(), "the server did not stop at start");
  BOOST_TEST(*code == 2);
  auto err = foreground.err();
  BOOST_TEST(err.find("cannot start: the run store " + store + " is damaged") != std::string::npos, err);
  BOOST_TEST(err.find("move it away") != std::string::npos, err);
  BOOST_TEST(err.find("serving") == std::string::npos, err);
  BOOST_TEST(!fs::exists(home.path() / "server.json"));

  cdui::test::process background{{CDUI_BINARY, "start", "--port", "0"}, env};
  code = background.wait_for(90s);
  BOOST_TEST_REQUIRE(code.has_value());
  BOOST_TEST(*code == 2);
  BOOST_TEST(background.out().find("started") == std::string::npos, background.out());
  BOOST_TEST(background.err().find(store) != std::string::npos, background.err());
  BOOST_TEST(!fs::exists(home.path() / "server.json"));
  // The file is as it was: nothing was written into it.
  BOOST_TEST(first_bytes(home.path() / "cdui.db", 4) == "PK\x03\x04");
}

BOOST_AUTO_TEST_SUITE_END()
