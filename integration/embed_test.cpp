// Issue 18, embedding: `cmake --install` this build into a temporary prefix, build the lab service
// of examples/embed against the installed CMake package alone (find_package(cdui 0.1)), run it on
// the moons example and read what it did.
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "testkit/home.hpp"
#include "testkit/process.hpp"

using cdui::test::file_text;
using namespace std::chrono_literals;
using cdui::test::run_command;
namespace fs = std::filesystem;

namespace {

/// Runs a step of the build; a failure stops the test with its output.
void build_step(const std::vector<std::string>& argv) {
  auto done = run_command(argv, {}, 300s);
  BOOST_TEST_REQUIRE(done.code == 0, argv.at(1) << " failed (" << done.code << "):\n"
                                                   << done.out << done.err);
}

} // namespace

BOOST_AUTO_TEST_SUITE(embed_test)

BOOST_AUTO_TEST_CASE(a_service_builds_against_the_installed_package_and_trains_moons) {
  cdui::test::temp_home work;  // the prefix, the service's build and its home; removed at the end
  auto prefix = work.path() / "prefix";
  auto build = work.path() / "build";
  auto home = work.path() / "home";

  build_step({CDUI_CMAKE, "--install", CDUI_BUILD_DIR, "--prefix", prefix.string()});
  BOOST_TEST(fs::is_regular_file(prefix / "bin" / "cdui"));
  BOOST_TEST(fs::is_regular_file(prefix / "lib" / "cmake" / "cdui" / "cduiConfig.cmake"));
  BOOST_TEST(fs::is_regular_file(prefix / "lib" / "cmake" / "cdui" / "cduiConfigVersion.cmake"));
  // The public headers name no header of torch, CAF, cereal, ZeroMQ or httplib.
  // And the set is whole: every header of cdui's that one of them includes is installed too.
  std::regex private_include{R"(#include\s*[<"](torch|ATen|c10|caf|cereal|zmq|httplib|spdlog)[/.])"};
  std::regex own_include{R"re(#include\s*"([^"]+)")re"};
  auto root = prefix / "include" / "cdui";
  int headers = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file())
      continue;
    ++headers;
    auto text = file_text(entry.path());
    BOOST_TEST(!std::regex_search(text, private_include), entry.path());
    for (std::sregex_iterator i{text.begin(), text.end(), own_include}, end; i != end; ++i)
      BOOST_TEST(fs::is_regular_file(root / (*i)[1].str()), entry.path() << " includes " << (*i)[1] << ", not installed");
  }
  BOOST_TEST(headers > 0);

  std::vector<std::string> configure{CDUI_CMAKE, "-S", std::string{CDUI_SOURCE_DIR} + "/examples/embed",
                                     "-B", build.string(), "-G", CDUI_GENERATOR,
                                     "-DCMAKE_PREFIX_PATH=" + prefix.string(),
                                     "-DCMAKE_CXX_COMPILER=" CDUI_CXX_COMPILER,
                                     "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"};
  if (!std::string{CDUI_CXX_LAUNCHER}.empty())
    configure.push_back("-DCMAKE_CXX_COMPILER_LAUNCHER=" CDUI_CXX_LAUNCHER);
  if (!std::string{CDUI_EMBED_FLAGS}.empty()) {
    configure.push_back("-DCMAKE_CXX_FLAGS=" CDUI_EMBED_FLAGS);
    configure.push_back("-DCMAKE_EXE_LINKER_FLAGS=" CDUI_EMBED_FLAGS);
  }
  build_step(configure);
  build_step({CDUI_CMAKE, "--build", build.string()});

  // The service compiles with the installed headers only: no torch include directory, nothing
  // of cdui's source tree.
  auto commands = file_text(build / "compile_commands.json");
  BOOST_TEST(commands.find("-isystem " + (prefix / "include" / "cdui").string()) != std::string::npos,
             commands);
  BOOST_TEST(commands.find("torch") == std::string::npos, commands);
  BOOST_TEST(commands.find(std::string{"-I"} + CDUI_SOURCE_DIR) == std::string::npos, commands);

  auto ran = run_command({(build / "lab_service").string(),
                          std::string{CDUI_SOURCE_DIR} + "/examples/moons_mlp.json", home.string()},
                         {}, 120s);
  BOOST_TEST_INFO(ran.out << ran.err);
  BOOST_TEST(ran.code == 0);
  std::smatch m;
  BOOST_TEST_REQUIRE(std::regex_search(ran.out, m, std::regex{R"(submitted ([0-9a-f]{8}) \(lab-moons\))"}));
  auto id = m[1].str();
  BOOST_TEST(ran.out.find("HTTP API on http://127.0.0.1:") != std::string::npos);
  BOOST_TEST(std::regex_search(ran.out, std::regex{R"(run [0-9a-f]{8} \(to-cancel\): cancel asked, cancelled)"}));
  BOOST_TEST(ran.out.find("event 1 execution_start") != std::string::npos);
  BOOST_TEST(std::regex_search(ran.out, std::regex{R"(event \d+ execution_complete)"}));
  BOOST_TEST(ran.out.find("run " + id + " succeeded: final metrics {") != std::string::npos);
  BOOST_TEST_REQUIRE(std::regex_search(ran.out, m, std::regex{R"(val_accuracy: 20 points, last ([0-9.]+))"}));
  BOOST_TEST(std::stod(m[1].str()) >= 0.95);
  BOOST_TEST(ran.out.find("GET /api/runs/" + id + ": 200 succeeded") != std::string::npos);
  BOOST_TEST(ran.out.find("shut down") != std::string::npos);
  // The runs are in the service's home, as a server's are.
  BOOST_TEST(fs::is_regular_file(home / "cdui.db"));
  BOOST_TEST(fs::is_directory(home / "runs" / id));
}

BOOST_AUTO_TEST_SUITE_END()
