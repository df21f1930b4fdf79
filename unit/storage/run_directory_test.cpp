#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <fstream>

#include <nlohmann/json.hpp>

#include "storage/home.hpp"
#include "storage/run_directory.hpp"
#include "testkit/home.hpp"

BOOST_AUTO_TEST_SUITE(run_directory_test)

BOOST_AUTO_TEST_CASE(a_run_folder_keeps_the_graph_and_appends_every_event) {
  cdui::test::temp_home home;
  cdui::storage::run_directory dir{home.path(), "abc123", R"({"nodes": []})"};
  BOOST_TEST(dir.path() == home.path() / "runs" / "abc123");
  BOOST_TEST(std::filesystem::is_directory(dir.checkpoints()));
  cdui::run_event e{1, 1700000000000, "metric", R"({"name":"train_loss","value":0.5})"};
  dir.append(e);
  e.cursor = 2;
  e.type = "execution_complete";
  e.data = "{}";
  dir.append(e);
  std::ifstream events{dir.path() / "events.jsonl"};
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(events, line))
    lines.push_back(nlohmann::json::parse(line));
  BOOST_REQUIRE(lines.size() == 2u);
  BOOST_TEST(lines[0]["data"]["value"] == 0.5);
  BOOST_TEST(lines[1]["type"] == "execution_complete");
  std::ifstream log{dir.path() / "output.log"};
  std::getline(log, line);
  BOOST_TEST(line.find("2023-11-14T22:13:20Z metric") == 0u);
  std::ifstream graph{dir.path() / "graph.json"};
  std::getline(graph, line);
  BOOST_TEST(line == R"({"nodes": []})");
}

BOOST_AUTO_TEST_CASE(an_atomic_write_replaces_the_file_whole_and_leaves_no_temp_file) {
  cdui::test::temp_home home;
  auto path = home.path() / "state.json";
  cdui::storage::write_file_atomic(path, "old");
  cdui::storage::write_file_atomic(path, "new contents");
  std::ifstream in{path};
  std::string text((std::istreambuf_iterator<char>(in)), {});
  BOOST_TEST(text == "new contents");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(home.path()))
    ++files;
  BOOST_TEST(files == 1u);
  try {
    cdui::storage::write_file_atomic(home.path() / "no" / "such" / "dir", "x");
    BOOST_FAIL("a write into a folder that does not exist succeeded");
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    BOOST_TEST(what.find((home.path() / "no" / "such" / "dir").string()) != std::string::npos, what);
    BOOST_TEST(what.find("No such file or directory") != std::string::npos, what);
  }
}

BOOST_AUTO_TEST_CASE(a_full_disk_is_said_as_such) {
  BOOST_TEST(cdui::storage::io_error_text(ENOSPC) == "the disk is full (No space left on device)");
  BOOST_TEST(cdui::storage::io_error_text(EDQUOT).find("the disk is full") == 0u);
  BOOST_TEST(cdui::storage::io_error_text(EACCES) == "Permission denied");
}

BOOST_AUTO_TEST_CASE(codefyui_home_sets_the_home) {
  ::setenv("CODEFYUI_HOME", "/tmp/somewhere", 1);
  BOOST_TEST(cdui::storage::default_home() == "/tmp/somewhere");
  ::unsetenv("CODEFYUI_HOME");
  BOOST_TEST(cdui::storage::default_home().filename() == ".cdui");
}

BOOST_AUTO_TEST_SUITE_END()
