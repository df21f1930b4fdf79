// The dashboard's page as compiled into cdui: every file of apps/dashboard/ and Chart.js, byte for
// byte, with their content types.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/dashboard_files.hpp"

using namespace cdui::apps;

BOOST_AUTO_TEST_SUITE(dashboard_files_test)

namespace {

std::string file_text(const std::filesystem::path& file) {
  std::ifstream in{file, std::ios::binary};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

BOOST_AUTO_TEST_CASE(every_file_of_the_dashboard_folder_is_served_as_it_is) {
  std::filesystem::path folder{CDUI_SOURCE_DIR "/apps/dashboard"};
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator{folder}) {
    if (!entry.is_regular_file())
      continue;
    auto path = "/ui/" + std::filesystem::relative(entry.path(), folder).generic_string();
    BOOST_TEST_CONTEXT(path) {
      const auto* file = find_dashboard_file(path);
      BOOST_REQUIRE(file != nullptr);
      BOOST_TEST(file->bytes == file_text(entry.path()));
      BOOST_TEST(file->content_type != "application/octet-stream");
    }
    ++files;
  }
  BOOST_TEST(files >= 5u);
}

BOOST_AUTO_TEST_CASE(the_root_is_the_index_and_chart_js_is_debians) {
  const auto* root = find_dashboard_file("/");
  BOOST_REQUIRE(root != nullptr);
  BOOST_TEST(root->path == "/ui/index.html");
  BOOST_TEST(root->content_type == "text/html; charset=utf-8");
  const auto* chart = find_dashboard_file("/ui/vendor/chart.min.js");
  BOOST_REQUIRE(chart != nullptr);
  BOOST_TEST(chart->bytes.find("Chart.js v") != std::string_view::npos);
  BOOST_TEST(chart->content_type == "text/javascript; charset=utf-8");
}

BOOST_AUTO_TEST_CASE(unknown_paths_find_nothing) {
  BOOST_TEST(find_dashboard_file("/ui/") == nullptr);
  BOOST_TEST(find_dashboard_file("/ui/../CMakeLists.txt") == nullptr);
  BOOST_TEST(find_dashboard_file("/index.html") == nullptr);
  BOOST_TEST(find_dashboard_file("") == nullptr);
}

BOOST_AUTO_TEST_CASE(content_types_come_from_the_extension) {
  BOOST_TEST(content_type_of("/ui/app.js") == "text/javascript; charset=utf-8");
  BOOST_TEST(content_type_of("/ui/style.css") == "text/css; charset=utf-8");
  BOOST_TEST(content_type_of("/ui/a.b/file") == "application/octet-stream");
  BOOST_TEST(content_type_of("/ui/x.exe") == "application/octet-stream");
}

BOOST_AUTO_TEST_CASE(the_policy_allows_no_inline_script_and_nothing_from_elsewhere) {
  std::string csp = dashboard_csp;
  BOOST_TEST(csp.find("script-src 'self'") != std::string::npos);
  BOOST_TEST(csp.find("unsafe-inline") == std::string::npos);
  BOOST_TEST(csp.find("unsafe-eval") == std::string::npos);
  BOOST_TEST(csp.find("default-src 'none'") != std::string::npos);
  BOOST_TEST(csp.find("frame-ancestors 'none'") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
