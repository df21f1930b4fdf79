#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>

#include <sqlite3.h>

#include "storage/wal_checkpointer.hpp"
#include "testkit/home.hpp"
#include "testkit/wait.hpp"

using cdui::storage::wal_checkpointer;

namespace {

/// A raw connection to a database in WAL mode whose commits never checkpoint (the writer's side of
/// a wal_checkpointer).
struct writer {
  explicit writer(const std::filesystem::path& file) {
    BOOST_REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
    exec("PRAGMA journal_mode=WAL");
    sqlite3_wal_autocheckpoint(db, 0);
    exec("CREATE TABLE rows (id INTEGER PRIMARY KEY, text TEXT NOT NULL)");
  }
  ~writer() { sqlite3_close(db); }
  void exec(const std::string& sql) const {
    BOOST_REQUIRE_MESSAGE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK, sql);
  }
  /// The WAL's frames now (what sqlite3_wal_hook reports after a commit).
  [[nodiscard]] int wal_frames() const {
    int frames = 0;
    sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, &frames, nullptr);
    return frames;
  }
  sqlite3* db = nullptr;
};

/// How many rows a copy of the database file alone (without its WAL) holds: those that
/// checkpoints have put there.
int rows_in_the_file_alone(const std::filesystem::path& file) {
  auto copy = file.parent_path() / "alone.db";
  std::filesystem::copy_file(file, copy, std::filesystem::copy_options::overwrite_existing);
  sqlite3* db = nullptr;
  int rows = -1;
  if (sqlite3_open(copy.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* count = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM rows", -1, &count, nullptr) == SQLITE_OK
        && sqlite3_step(count) == SQLITE_ROW)
      rows = sqlite3_column_int(count, 0);
    sqlite3_finalize(count);
  }
  sqlite3_close(db);
  return rows;
}

} // namespace

BOOST_AUTO_TEST_SUITE(wal_checkpointer_test)

BOOST_AUTO_TEST_CASE(below_its_threshold_a_commit_asks_for_nothing) {
  cdui::test::temp_home home;
  auto file = home.path() / "store.db";
  writer w{file};
  wal_checkpointer checkpointer{file, 1000, 4000};
  w.exec("INSERT INTO rows (text) VALUES ('a')");
  checkpointer.committed(w.db, 999);
  BOOST_TEST(checkpointer.checkpoints() == 0u);
  BOOST_TEST(rows_in_the_file_alone(file) == -1);  // not even the table is in the file
}

BOOST_AUTO_TEST_CASE(at_its_threshold_its_thread_puts_the_wal_into_the_database_file) {
  cdui::test::temp_home home;
  auto file = home.path() / "store.db";
  writer w{file};
  for (int i = 0; i < 20; ++i)
    w.exec("INSERT INTO rows (text) VALUES ('" + std::string(1000, 'x') + "')");
  wal_checkpointer checkpointer{file, 4, 1000};
  // The hook's call after the last commit: over the threshold, under the inline one.
  checkpointer.committed(w.db, 25);
  BOOST_REQUIRE(cdui::test::eventually([&] { return checkpointer.checkpoints() == 1u; }));
  BOOST_TEST(rows_in_the_file_alone(file) == 20);
}

BOOST_AUTO_TEST_CASE(at_the_inline_threshold_the_commit_checkpoints_before_it_returns) {
  cdui::test::temp_home home;
  auto file = home.path() / "store.db";
  writer w{file};
  for (int i = 0; i < 5; ++i)
    w.exec("INSERT INTO rows (text) VALUES ('y')");
  wal_checkpointer checkpointer{file, 1000, 8};
  checkpointer.committed(w.db, 8);
  BOOST_TEST(checkpointer.checkpoints() == 1u);  // no wait: it is done on return
  BOOST_TEST(rows_in_the_file_alone(file) == 5);
  // Every frame is in the file, so the next commit starts the WAL again.
  w.exec("INSERT INTO rows (text) VALUES ('z')");
  BOOST_TEST(w.wal_frames() == 1);
}

BOOST_AUTO_TEST_SUITE_END()
