// The home and its own files: created private, an earlier home narrowed (storage/home.*), and
// the server's files that live in it (storage/server_files.*).
#include <boost/test/unit_test.hpp>

#include <fstream>

#include <sys/stat.h>

#include "storage/home.hpp"
#include "storage/server_files.hpp"
#include "testkit/home.hpp"

namespace fs = std::filesystem;
using cdui::storage::home_lock;

namespace {

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  BOOST_TEST_REQUIRE(::lstat(p.c_str(), &st) == 0, p);
  return st.st_mode & 07777;
}

/// The process's umask while it lives, then the old one again.
class scoped_umask {
public:
  explicit scoped_umask(mode_t mask) : old_(::umask(mask)) {}
  ~scoped_umask() { ::umask(old_); }

private:
  mode_t old_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(home_test)

BOOST_AUTO_TEST_CASE(a_new_home_and_the_folders_above_it_are_private) {
  scoped_umask shell{022};
  cdui::test::temp_home tmp;
  auto home = tmp.path() / "a" / "b" / "home";
  cdui::storage::prepare_home(home);
  BOOST_TEST(mode_of(home) == 0700u);
  BOOST_TEST(mode_of(tmp.path() / "a") == 0700u);
}

BOOST_AUTO_TEST_CASE(an_earlier_home_open_to_others_is_narrowed_with_its_files) {
  scoped_umask shell{022};
  cdui::test::temp_home tmp;
  auto home = tmp.path();
  ::chmod(home.c_str(), 0755);
  for (const char* name : {"cdui.db", "cdui.db-wal", "server.log", "server.json", "session.token"})
    std::ofstream{home / name} << "x";
  std::ofstream{home / "notes.txt"} << "the user's own";
  fs::create_symlink("/etc/hostname", home / "server.curve");
  cdui::storage::prepare_home(home);
  BOOST_TEST(mode_of(home) == 0700u);
  for (const char* name : {"cdui.db", "cdui.db-wal", "server.log", "server.json", "session.token"})
    BOOST_TEST(mode_of(home / name) == 0600u, name);
  BOOST_TEST(mode_of(home / "notes.txt") == 0644u);  // not one of cdui's files
  BOOST_TEST(mode_of("/etc/hostname") != 0600u);    // a link is not followed
}

BOOST_AUTO_TEST_CASE(a_shared_sticky_folder_is_left_as_it_is) {
  cdui::test::temp_home tmp;
  ::chmod(tmp.path().c_str(), 01777);
  cdui::storage::prepare_home(tmp.path());
  BOOST_TEST(mode_of(tmp.path()) == 01777u);
}

BOOST_AUTO_TEST_CASE(a_home_that_is_a_file_is_refused_naming_it) {
  cdui::test::temp_home tmp;
  auto file = tmp.path() / "home";
  std::ofstream{file} << "x";
  BOOST_CHECK_EXCEPTION(cdui::storage::prepare_home(file), std::runtime_error,
                        [&](const std::runtime_error& e) {
                          return std::string{e.what()}.find(file.string()) != std::string::npos;
                        });
}

BOOST_AUTO_TEST_CASE(the_home_lock_prepares_the_home_and_server_json_is_private) {
  scoped_umask shell{022};
  cdui::test::temp_home tmp;
  auto home = tmp.path() / "home";
  auto lock = home_lock::try_lock(home, home_lock::mode::exclusive);
  BOOST_TEST_REQUIRE(lock.has_value());
  BOOST_TEST(mode_of(home) == 0700u);
  BOOST_TEST(mode_of(home / "server.lock") == 0600u);
  cdui::storage::write_server_json(home, {"127.0.0.1", 8000, 1, "", ""});
  BOOST_TEST(mode_of(home / "server.json") == 0600u);
  BOOST_TEST(cdui::storage::read_server_json(home)->port == 8000);
  // An agent's lock file makes its folders private too.
  auto agent = home_lock::try_lock_file(home / "agents" / "w1" / "agent.lock", home_lock::mode::exclusive);
  BOOST_TEST_REQUIRE(agent.has_value());
  BOOST_TEST(mode_of(home / "agents") == 0700u);
  BOOST_TEST(mode_of(home / "agents" / "w1") == 0700u);
}

BOOST_AUTO_TEST_CASE(a_start_that_fails_leaves_the_token_file_as_it_found_it) {
  using cdui::storage::new_session_token;
  using cdui::storage::read_token;
  cdui::test::temp_home tmp;
  auto home = tmp.path();
  auto file = cdui::storage::token_path(home);
  {
    new_session_token first{home};
    BOOST_TEST(read_token(home).value_or("") == first.token());
    BOOST_TEST(mode_of(file) == 0600u);
  }
  BOOST_TEST(!fs::exists(file));  // there was none before

  std::string kept;
  {
    new_session_token started{home};
    started.keep();
    kept = started.token();
  }
  BOOST_TEST(read_token(home).value_or("") == kept);

  {
    new_session_token failed{home};
    BOOST_TEST(failed.token() != kept);
    BOOST_TEST(read_token(home).value_or("") == failed.token());  // written before the server binds
  }
  BOOST_TEST(read_token(home).value_or("") == kept);
  BOOST_TEST(mode_of(file) == 0600u);
}

BOOST_AUTO_TEST_SUITE_END()
