// The rules for the files a run's nodes read and write (runtime/file_access.hpp), on real folders:
// a home laid out as the server lays it out, links, a FIFO and /dev/zero.
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>

#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include "runtime/file_access.hpp"
#include "testkit/home.hpp"

using cdui::runtime::file_access;
using cdui::runtime::file_decision;
using cdui::runtime::file_roots;
using cdui::runtime::file_use;
using cdui::runtime::leaves_its_folder;
using cdui::runtime::parse_roots;
using cdui::runtime::refusal_by_text;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out{path, std::ios::binary};
  out << text;
}

std::string read_file(const fs::path& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

/// A temporary folder with a cdui home in it, laid out as the server lays it out (home/cdui.db,
/// home/session.token, home/runs/<id>/checkpoints/), a run of that home, and data and output
/// roots beside the home.
struct layout {
  cdui::test::temp_home tmp;
  fs::path home = tmp.path() / "home";
  fs::path run_dir = home / "runs" / "run1";
  fs::path other_run = home / "runs" / "run0";
  fs::path data = tmp.path() / "data";
  fs::path out = tmp.path() / "out";

  layout() {
    write_file(home / "cdui.db", "the store");
    write_file(home / "session.token", "secret\n");
    write_file(home / "server.json", "{}");
    write_file(run_dir / "graph.json", "{}");
    fs::create_directories(run_dir / "checkpoints");
    write_file(other_run / "graph.json", "{}");
    write_file(other_run / "checkpoints" / "ck.pt", "weights");
    write_file(data / "iris.csv", "a,label\n1,x\n");
    fs::create_directories(out);
  }

  /// The rules for the run, with these output and data roots.
  [[nodiscard]] file_access rules(std::vector<fs::path> outputs = {},
                                  std::vector<fs::path> datas = {}) const {
    return file_access{run_dir, home, file_roots{outputs, datas}};
  }
};

void expect_refused(const file_decision& d, std::vector<std::string> words) {
  BOOST_TEST_REQUIRE(!d.allowed(), "allowed: " << d.real);
  for (const auto& w : words)
    BOOST_TEST(contains(d.refusal, w), "[" << w << "] not in: " << d.refusal);
}

void expect_allowed(const file_decision& d, const fs::path& real) {
  BOOST_TEST_REQUIRE(d.allowed(), d.refusal);
  BOOST_TEST(d.real == fs::weakly_canonical(real));
}

} // namespace

BOOST_AUTO_TEST_SUITE(file_access_test)

BOOST_AUTO_TEST_CASE(roots_are_absolute_folders_separated_by_colons) {
  BOOST_TEST(parse_roots("").empty());
  auto roots = parse_roots("/a:/b/::relative:./also:/c/d/../e");
  BOOST_TEST_REQUIRE(roots.size() == 3u);
  BOOST_TEST(roots[0] == fs::path{"/a"});
  BOOST_TEST(roots[1] == fs::path{"/b"});
  BOOST_TEST(roots[2] == fs::path{"/c/e"});
}

BOOST_AUTO_TEST_CASE(roots_come_from_the_environment_when_the_run_executes) {
  ::setenv("CODEFYUI_OUTPUT_ROOTS", "/srv/out", 1);
  ::setenv("CODEFYUI_DATA_ROOTS", "/srv/data:/mnt/sets", 1);
  auto roots = file_roots::from_environment();
  ::unsetenv("CODEFYUI_OUTPUT_ROOTS");
  ::unsetenv("CODEFYUI_DATA_ROOTS");
  BOOST_TEST(roots.output == std::vector<fs::path>{"/srv/out"});
  BOOST_TEST((roots.data == std::vector<fs::path>{"/srv/data", "/mnt/sets"}));
  BOOST_TEST(file_roots::from_environment().data.empty());
}

BOOST_AUTO_TEST_CASE(a_relative_path_that_climbs_out_is_told_by_its_text) {
  BOOST_TEST(leaves_its_folder("../x"));
  BOOST_TEST(leaves_its_folder(".."));
  BOOST_TEST(leaves_its_folder("a/../../x"));
  BOOST_TEST(leaves_its_folder("../../../cdui.db"));
  BOOST_TEST(!leaves_its_folder("a/../x"));
  BOOST_TEST(!leaves_its_folder("./x"));
  BOOST_TEST(!leaves_its_folder("x..y"));
  BOOST_TEST(refusal_by_text(file_use::output, "path", "ok.pt").empty());
  BOOST_TEST(refusal_by_text(file_use::output, "path", "/abs/../../x").empty());  // judged at run time
  BOOST_TEST(contains(refusal_by_text(file_use::output, "path", ""), "param 'path' is empty"));
  auto refusal = refusal_by_text(file_use::output, "path", "../../../cdui.db");
  BOOST_TEST(contains(refusal, "param 'path' '../../../cdui.db' leaves the run's checkpoints/"), refusal);
  BOOST_TEST(contains(refusal, "CODEFYUI_OUTPUT_ROOTS"), refusal);
}

// Outputs

BOOST_AUTO_TEST_CASE(a_path_with_a_nul_byte_is_refused_for_every_use_and_nothing_is_written) {
  // "ok\0.pt" was accepted and wrote "ok" (issue 33): the system ends a name at the NUL.
  using namespace std::string_literals;
  for (auto use : {file_use::output, file_use::checkpoint, file_use::data}) {
    auto refusal = refusal_by_text(use, "path", "ok\0.pt"s);
    BOOST_TEST(contains(refusal, "param 'path' 'ok\\x00.pt' holds a NUL byte (byte 3)"), refusal);
  }
  layout l;
  expect_refused(l.rules().write("path", "ok\0.pt"s, "bytes"), {"holds a NUL byte"});
  expect_refused(l.rules().write("path", (l.run_dir / "checkpoints" / "a").string() + "\0b"s, "bytes"),
                 {"holds a NUL byte"});
  BOOST_TEST(!fs::exists(l.run_dir / "checkpoints" / "ok"));
  BOOST_TEST(!fs::exists(l.run_dir / "checkpoints" / "a"));
}

BOOST_AUTO_TEST_CASE(a_relative_output_lands_in_the_run_s_checkpoints_folder) {
  layout l;
  auto d = l.rules().decide(file_use::output, "path", "sub/../model.pt");
  expect_allowed(d, l.run_dir / "checkpoints" / "model.pt");
  BOOST_TEST(d.shown == l.run_dir / "checkpoints" / "model.pt");
  expect_allowed(l.rules().decide(file_use::output, "path", "deep/er/model.pt"),
                 l.run_dir / "checkpoints" / "deep" / "er" / "model.pt");
  expect_refused(l.rules().decide(file_use::output, "path", "."), {"is a folder"});
}

BOOST_AUTO_TEST_CASE(an_output_that_climbs_out_of_checkpoints_is_refused_and_nothing_is_written) {
  layout l;
  auto d = l.rules().write("path", "../../../cdui.db", "checkpoint bytes");
  expect_refused(d, {"param 'path'", "'../../../cdui.db'", "leaves the run's checkpoints/ folder"});
  BOOST_TEST(read_file(l.home / "cdui.db") == "the store");
  // The same file named absolutely, even under an output root that holds the home.
  for (const auto& name : {"cdui.db", "session.token", "server.json", "server.log", "cdui.db-wal"}) {
    auto absolute = l.rules({l.tmp.path()}).write("path", (l.home / name).string(), "bytes");
    expect_refused(absolute, {"param 'path'", name, "inside cdui's home"});
  }
  BOOST_TEST(read_file(l.home / "cdui.db") == "the store");
  BOOST_TEST(read_file(l.home / "session.token") == "secret\n");
  BOOST_TEST(!fs::exists(l.home / "server.log"));
}

BOOST_AUTO_TEST_CASE(another_run_s_folder_and_the_run_s_own_files_are_not_outputs) {
  layout l;
  auto rules = l.rules({l.tmp.path()});
  expect_refused(rules.decide(file_use::output, "path",
                              (l.other_run / "checkpoints" / "ck.pt").string()),
                 {"inside cdui's home"});
  expect_refused(rules.decide(file_use::output, "path", (l.run_dir / "graph.json").string()),
                 {"inside cdui's home"});
  // Its own checkpoints/ folder, named absolutely, is where a relative path goes anyway.
  expect_allowed(rules.decide(file_use::output, "path", (l.run_dir / "checkpoints" / "a.pt").string()),
                 l.run_dir / "checkpoints" / "a.pt");
}

BOOST_AUTO_TEST_CASE(an_absolute_output_needs_an_output_root) {
  layout l;
  auto target = (l.out / "models" / "m.pt").string();
  expect_refused(l.rules().decide(file_use::output, "path", target),
                 {"param 'path'", target, "under no output root", "CODEFYUI_OUTPUT_ROOTS"});
  auto d = l.rules({l.out}).write("path", target, "weights");
  BOOST_TEST_REQUIRE(d.allowed(), d.refusal);
  BOOST_TEST(read_file(target) == "weights");
  // The temporary file is gone: only the target is in the folder.
  BOOST_TEST(std::distance(fs::directory_iterator{l.out / "models"}, fs::directory_iterator{}) == 1);
  // A root elsewhere does not cover it, nor does a data root.
  expect_refused(l.rules({l.data}, {l.out}).decide(file_use::output, "path", target),
                 {"under no output root"});
}

BOOST_AUTO_TEST_CASE(a_link_cannot_lead_an_output_out) {
  layout l;
  // checkpoints/sub -> the home: "sub/cdui.db" reads as inside checkpoints/, but is the store.
  fs::create_directory_symlink(l.home, l.run_dir / "checkpoints" / "sub");
  auto d = l.rules({l.tmp.path()}).write("path", "sub/cdui.db", "bytes");
  expect_refused(d, {"'" + (l.run_dir / "checkpoints" / "sub" / "cdui.db").string() + "'",
                     "inside cdui's home"});
  BOOST_TEST(read_file(l.home / "cdui.db") == "the store");
  // A link in an output root that points into the home.
  fs::create_directory_symlink(l.home / "runs", l.out / "runs");
  expect_refused(l.rules({l.out}).write("path", (l.out / "runs" / "run0" / "x.pt").string(), "b"),
                 {"inside cdui's home"});
  // The file itself a link to the token.
  fs::create_symlink(l.home / "session.token", l.run_dir / "checkpoints" / "model.pt");
  expect_refused(l.rules().write("path", "model.pt", "bytes"), {"inside cdui's home"});
  BOOST_TEST(read_file(l.home / "session.token") == "secret\n");
}

BOOST_AUTO_TEST_CASE(a_folder_that_looks_like_a_home_is_one_even_when_the_run_does_not_say) {
  layout l;
  cdui::test::temp_home elsewhere;  // a run folder outside any home, as in cdui fit
  write_file(l.out / "other-home" / "server.lock", "");
  file_access rules{elsewhere.path(), {}, file_roots{{l.out}, {l.out}}};
  expect_refused(rules.decide(file_use::output, "path", (l.out / "other-home" / "cdui.db").string()),
                 {"inside cdui's home"});
  expect_refused(rules.decide(file_use::checkpoint, "path", (l.out / "other-home" / "server.lock").string()),
                 {"inside cdui's home"});
  // The home of a run at <home>/runs/<id> is known without being given, marker or not.
  auto bare = l.out / "bare-home";
  fs::create_directories(bare / "runs" / "r1" / "checkpoints");
  file_access bare_rules{bare / "runs" / "r1", {}, file_roots{{l.out}, {l.out}}};
  expect_refused(bare_rules.decide(file_use::output, "path", (bare / "notes.txt").string()),
                 {"inside cdui's home"});
}

// Inputs

BOOST_AUTO_TEST_CASE(a_relative_data_path_is_looked_up_under_each_data_root_in_turn) {
  layout l;
  cdui::test::temp_home second;
  write_file(second.path() / "iris.csv", "b,label\n2,y\n");
  write_file(second.path() / "wine.csv", "c,label\n3,z\n");
  auto rules = l.rules({}, {l.data, second.path()});
  expect_allowed(rules.decide(file_use::data, "path", "iris.csv"), l.data / "iris.csv");
  expect_allowed(rules.decide(file_use::data, "path", "wine.csv"), second.path() / "wine.csv");
  expect_refused(rules.decide(file_use::data, "path", "absent.csv"),
                 {"param 'path'", "cannot open 'absent.csv'", "CODEFYUI_DATA_ROOTS"});
  expect_refused(rules.decide(file_use::data, "path", "../home/session.token"),
                 {"leaves the data roots"});
}

BOOST_AUTO_TEST_CASE(an_absolute_data_path_needs_a_data_root_or_the_run_s_folder) {
  layout l;
  auto iris = (l.data / "iris.csv").string();
  expect_refused(l.rules().decide(file_use::data, "path", iris),
                 {"param 'path'", iris, "under no data root", "CODEFYUI_DATA_ROOTS"});
  expect_allowed(l.rules({}, {l.data}).decide(file_use::data, "path", iris), iris);
  // An output root is not a data root.
  expect_refused(l.rules({l.data}).decide(file_use::data, "path", iris), {"under no data root"});
  write_file(l.run_dir / "checkpoints" / "mine.csv", "a,label\n1,x\n");
  expect_allowed(l.rules().decide(file_use::data, "path", (l.run_dir / "checkpoints" / "mine.csv").string()),
                 l.run_dir / "checkpoints" / "mine.csv");
}

BOOST_AUTO_TEST_CASE(the_built_in_datasets_folder_is_always_readable) {
  layout l;
  auto d = l.rules().decide(file_use::data, "root", "/usr/share/datasets/no-such-set/x.gz");
  // Allowed as a place: what is refused is that nothing is there.
  expect_refused(d, {"param 'root'", "cannot open", "no-such-set"});
  BOOST_TEST(!contains(d.refusal, "data root"), d.refusal);
}

BOOST_AUTO_TEST_CASE(the_home_s_files_are_never_inputs_whatever_the_roots) {
  layout l;
  auto rules = l.rules({l.tmp.path()}, {l.tmp.path()});
  for (const auto& name : {"cdui.db", "session.token", "server.json"}) {
    expect_refused(rules.decide(file_use::data, "path", (l.home / name).string()),
                   {"param 'path'", name, "inside cdui's home"});
    expect_refused(rules.decide(file_use::checkpoint, "path", (l.home / name).string()),
                   {"inside cdui's home"});
  }
  expect_refused(rules.decide(file_use::data, "path", (l.other_run / "graph.json").string()),
                 {"inside cdui's home"});
  // A link in a data root to the token is the token.
  fs::create_symlink(l.home / "session.token", l.data / "token.csv");
  expect_refused(rules.decide(file_use::data, "path", "data/token.csv"), {"inside cdui's home"});
  expect_refused(l.rules({}, {l.data}).decide(file_use::data, "path", (l.data / "token.csv").string()),
                 {"'" + (l.data / "token.csv").string() + "'", "inside cdui's home"});
}

BOOST_AUTO_TEST_CASE(a_checkpoint_is_read_from_this_run_or_from_any_run_s_checkpoints) {
  layout l;
  auto rules = l.rules();
  write_file(l.run_dir / "checkpoints" / "mine.pt", "weights");
  auto mine = rules.decide(file_use::checkpoint, "path", "mine.pt");
  expect_allowed(mine, l.run_dir / "checkpoints" / "mine.pt");
  expect_allowed(rules.decide(file_use::checkpoint, "path", (l.other_run / "checkpoints" / "ck.pt").string()),
                 l.other_run / "checkpoints" / "ck.pt");
  expect_refused(rules.decide(file_use::checkpoint, "path", "absent.pt"),
                 {"no checkpoint at '" + (l.run_dir / "checkpoints" / "absent.pt").string() + "'"});
  expect_refused(rules.decide(file_use::checkpoint, "path", "../../run0/checkpoints/ck.pt"),
                 {"leaves the run's checkpoints/ folder"});
  // Where savers may write, a loader may read back.
  write_file(l.out / "ck.pt", "weights");
  expect_refused(rules.decide(file_use::checkpoint, "path", (l.out / "ck.pt").string()),
                 {"under no data root", "CODEFYUI_OUTPUT_ROOTS"});
  expect_allowed(l.rules({l.out}).decide(file_use::checkpoint, "path", (l.out / "ck.pt").string()),
                 l.out / "ck.pt");
}

BOOST_AUTO_TEST_CASE(a_worker_run_knows_the_agent_s_home_and_the_one_above) {
  cdui::test::temp_home tmp;
  auto home = tmp.path() / "home";
  auto run_dir = home / "agents" / "w1" / "runs" / "r1";
  write_file(home / "session.token", "secret\n");
  write_file(home / "agents" / "w1" / "agent.json", "{}");
  write_file(home / "agents" / "w1" / "runs" / "r0" / "checkpoints" / "ck.pt", "weights");
  fs::create_directories(run_dir / "checkpoints");
  file_access rules{run_dir, {}, file_roots{{tmp.path()}, {tmp.path()}}};
  expect_refused(rules.decide(file_use::data, "path", (home / "session.token").string()),
                 {"inside cdui's home"});
  expect_refused(rules.decide(file_use::output, "path", (home / "agents" / "w1" / "agent.json").string()),
                 {"inside cdui's home"});
  expect_allowed(rules.decide(file_use::checkpoint, "path",
                              (home / "agents" / "w1" / "runs" / "r0" / "checkpoints" / "ck.pt").string()),
                 home / "agents" / "w1" / "runs" / "r0" / "checkpoints" / "ck.pt");
}

BOOST_AUTO_TEST_CASE(an_input_must_be_a_regular_file) {
  layout l;
  auto fifo = l.data / "pipe.csv";
  BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto rules = l.rules({}, {l.data, "/dev"});
  expect_refused(rules.decide(file_use::data, "path", fifo.string()), {"'" + fifo.string() + "'", "a FIFO"});
  // open() never waits for a writer: it answers at once.
  auto start = std::chrono::steady_clock::now();
  auto opened = rules.open(file_use::data, "path", "pipe.csv");
  BOOST_TEST(!opened.is_open());
  BOOST_TEST(contains(opened.refusal(), "a FIFO"), opened.refusal());
  BOOST_TEST((std::chrono::steady_clock::now() - start < std::chrono::seconds(5)));

  expect_refused(rules.decide(file_use::data, "path", "/dev/zero"),
                 {"'/dev/zero'", "a character device", "regular files only"});
  expect_refused(rules.decide(file_use::data, "path", l.data.string()), {"a folder"});
  // A link to a FIFO is a FIFO.
  fs::create_symlink(fifo, l.data / "link.csv");
  expect_refused(rules.decide(file_use::data, "path", "link.csv"), {"a FIFO"});
}

BOOST_AUTO_TEST_CASE(an_opened_input_reads_the_file_that_was_checked) {
  layout l;
  auto opened = l.rules({}, {l.data}).open(file_use::data, "path", "iris.csv");
  BOOST_TEST_REQUIRE(opened.is_open(), opened.refusal());
  BOOST_TEST(opened.quoted() == "'" + (l.data / "iris.csv").string() + "'");
  std::string text{std::istreambuf_iterator<char>{opened.stream()}, std::istreambuf_iterator<char>{}};
  BOOST_TEST(text == "a,label\n1,x\n");
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_utf8_in_a_path_are_shown_replaced) {
  layout l;
  auto d = l.rules().decide(file_use::output, "path", "/nowhere/\xff\xfe.pt");
  expect_refused(d, {"/nowhere/\xEF\xBF\xBD\xEF\xBF\xBD.pt"});
  BOOST_TEST(!contains(d.refusal, "\xff"));
}

BOOST_AUTO_TEST_SUITE_END()
