// Issue 18, packaging: `cpack -G DEB` on this build makes cdui_VERSION_amd64.deb (the executable,
// the systemd units, the maintainer scripts) and cdui-dev_VERSION_amd64.deb (headers, libraries,
// the CMake package). Their control files and contents are read with dpkg-deb, the cdui package is
// extracted into a temporary root and its `cdui --version` run, and the units go through
// `systemd-analyze verify` where it is installed.
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "testkit/home.hpp"
#include "testkit/process.hpp"

using namespace std::chrono_literals;
using cdui::test::run_command;
namespace fs = std::filesystem;

namespace {

/// Runs a command that must succeed; its stdout.
std::string output_of(const std::vector<std::string>& argv) {
  auto done = run_command(argv, {}, 300s);
  BOOST_TEST_REQUIRE(done.code == 0, argv.at(0) << " " << argv.at(1) << " failed (" << done.code
                                                << "):\n" << done.out << done.err);
  return done.out;
}

/// Where a program is on the PATH (`process` takes a path); empty when it is not installed.
std::string program(const std::string& name) {
  auto found = run_command({"/bin/sh", "-c", "command -v " + name}, {}, 10s);
  return found.code == 0 ? found.out.substr(0, found.out.find('\n')) : std::string{};
}

/// The package names of a Depends field, without versions; alternatives each count.
std::set<std::string> package_names(const std::string& depends) {
  std::set<std::string> names;
  std::regex name{R"(([a-z0-9][a-z0-9+.-]+)\s*(\([^)]*\))?\s*(,|\||$))"};
  for (std::sregex_iterator it{depends.begin(), depends.end(), name}, end; it != end; ++it)
    names.insert((*it)[1].str());
  return names;
}

/// Every package this machine has installed, and every name one of them provides.
std::set<std::string> installed_names() {
  std::set<std::string> names;
  std::istringstream lines{output_of({program("dpkg-query"), "-W", "-f", "${db:Status-Abbrev}|${Package}|${Provides}\n"})};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("ii", 0) != 0)
      continue;
    auto rest = line.substr(line.find('|') + 1);
    names.insert(rest.substr(0, rest.find('|')));
    for (const auto& n : package_names(rest.substr(rest.find('|') + 1)))
      names.insert(n);
  }
  return names;
}

bool holds(const std::string& listing, const std::string& path) {
  return listing.find(" ." + path + "\n") != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(package_test)

BOOST_AUTO_TEST_CASE(cpack_makes_a_deb_with_the_units_and_the_debian_packages_cdui_links) {
  cdui::test::temp_home work;  // cpack's output and the extracted root; removed at the end
  auto dpkg_deb = program("dpkg-deb");
  BOOST_TEST_REQUIRE(!dpkg_deb.empty(), "dpkg-deb is not installed");
  output_of({CDUI_CPACK, "-G", "DEB", "--config", std::string{CDUI_BUILD_DIR} + "/CPackConfig.cmake",
             "-B", work.path().string()});
  auto deb = (work.path() / ("cdui_" CDUI_PACKAGE_VERSION "_amd64.deb")).string();
  auto dev = (work.path() / ("cdui-dev_" CDUI_PACKAGE_VERSION "_amd64.deb")).string();

  BOOST_TEST(output_of({dpkg_deb, "-f", deb, "Package"}) == "cdui\n");
  BOOST_TEST(output_of({dpkg_deb, "-f", deb, "Version"}) == CDUI_PACKAGE_VERSION "\n");
  // The Debian packages of the libraries `cdui` links (dpkg-shlibdeps), and adduser for postinst.
  auto depends = output_of({dpkg_deb, "-f", deb, "Depends"});
  BOOST_TEST_MESSAGE("Depends: " << depends);
  auto names = package_names(depends);
  for (const char* wanted : {"adduser", "libtorch1.13", "libcaf-core0.17", "libzmq5", "libsqlite3-0",
                             "libsodium23", "libcpp-httplib0.11", "libfmt9", "zlib1g", "libc6"})
    BOOST_TEST(names.count(wanted) == 1, wanted << " is not in Depends: " << depends);
  BOOST_TEST(std::regex_search(depends, std::regex{R"(libspdlog1\.10)"}), depends);
  // What apt-get would install: each one is a package (or a name one provides) of Debian 12,
  // as installed on this machine by scripts/install-deps.sh.
  auto installed = installed_names();
  for (const auto& name : names)
    BOOST_TEST(installed.count(name) == 1, name << " (from Depends) is no package installed here");
  BOOST_TEST(output_of({dpkg_deb, "-f", deb, "Recommends"}) == "libopenblas0-openmp\n");

  auto listing = output_of({dpkg_deb, "-c", deb});
  for (const char* path : {"/usr/bin/cdui", "/usr/libexec/cdui/cdui-runtime", "/usr/lib/systemd/system/cdui.service",
                           "/usr/lib/systemd/system/cdui-agent@.service",
                           "/usr/share/doc/cdui/operations.md", "/usr/share/cdui/slurm/cdui-agents.sbatch"})
    BOOST_TEST(holds(listing, path), path << " is not in the package:\n" << listing);
  // The maintainer scripts: the cdui system user and its private home.
  auto postinst = output_of({dpkg_deb, "-I", deb, "postinst"});
  BOOST_TEST(postinst.find("adduser --system --group --home /var/lib/cdui") != std::string::npos, postinst);
  BOOST_TEST(postinst.find("install -d -m 0700 -o cdui -g cdui /var/lib/cdui") != std::string::npos);
  BOOST_TEST(output_of({dpkg_deb, "-I", deb, "prerm"}).find("systemctl stop") != std::string::npos);

  // The development package: headers, libraries, the CMake package, and what its config finds.
  BOOST_TEST(output_of({dpkg_deb, "-f", dev, "Package"}) == "cdui-dev\n");
  auto dev_depends = output_of({dpkg_deb, "-f", dev, "Depends"});
  BOOST_TEST(dev_depends.find("cdui (= " CDUI_PACKAGE_VERSION ")") != std::string::npos, dev_depends);
  for (const auto& name : package_names(dev_depends))
    BOOST_TEST((name == "cdui" || installed.count(name) == 1), name << " (from cdui-dev's Depends) is no package installed here");
  auto dev_listing = output_of({dpkg_deb, "-c", dev});
  for (const char* path : {"/usr/include/cdui/actors/server/server.hpp",
                           "/usr/include/cdui/apps/http_api.hpp", "/usr/lib/cmake/cdui/cduiConfig.cmake",
                           "/usr/lib/cmake/cdui/cduiConfigVersion.cmake",
                           "/usr/lib/cmake/cdui/cduiTargets.cmake", "/usr/lib/libcdui_actors.a",
                           "/usr/lib/libcdui_http.a"})
    BOOST_TEST(holds(dev_listing, path), path << " is not in cdui-dev:\n" << dev_listing);

  // Unpacked into a root of its own, the packaged (stripped) binary runs on this machine's libraries.
  auto root = work.path() / "root";
  output_of({dpkg_deb, "-x", deb, root.string()});
  BOOST_TEST(output_of({(root / "usr/bin/cdui").string(), "--version"}) == "cdui " CDUI_PACKAGE_VERSION "\n");
  // A command with libtorch: cdui becomes the unpacked /usr/libexec/cdui/cdui-runtime.
  auto devices = output_of({(root / "usr/bin/cdui").string(), "devices"});
  BOOST_TEST(devices.find("cpu") != std::string::npos, devices);

  // The units, pointed at the unpacked binary, as systemd reads them (no systemd needs to run).
  auto analyze = program("systemd-analyze");
  if (analyze.empty()) {
    BOOST_TEST_MESSAGE("systemd-analyze is not installed: the units are not verified");
    return;
  }
  auto units = work.path() / "units";
  fs::create_directories(units);
  for (const char* unit : {"cdui.service", "cdui-agent@.service"}) {
    std::ifstream in{root / "usr/lib/systemd/system" / unit};
    std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
    text = std::regex_replace(text, std::regex{"/usr/bin/cdui"}, (root / "usr/bin/cdui").string());
    std::ofstream{units / (unit == std::string{"cdui.service"} ? "cdui.service" : "cdui-agent@lab-1.service")}
      << text;
  }
  auto verified = run_command({analyze, "verify", "--man=no", (units / "cdui.service").string(),
                               (units / "cdui-agent@lab-1.service").string()},
                              {}, 60s);
  BOOST_TEST(verified.code == 0);
  // It only warns (exit 0) about an unknown key or a bad value: the units must say nothing.
  BOOST_TEST(verified.out + verified.err == "", verified.out << verified.err);
}

BOOST_AUTO_TEST_SUITE_END()
