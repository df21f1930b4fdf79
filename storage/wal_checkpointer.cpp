#include "storage/wal_checkpointer.hpp"

#include <stdexcept>
#include <string>

#include <sqlite3.h>

namespace cdui::storage {

namespace {

/// A PASSIVE checkpoint of `db`; the frames now in the database, or -1 when it did not run
/// (SQLITE_BUSY: another checkpoint was under way, in another process say).
int checkpoint(sqlite3* db) {
  int in_wal = 0;
  int backfilled = 0;
  if (sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, &in_wal, &backfilled) != SQLITE_OK)
    return -1;
  return backfilled;
}

} // namespace

wal_checkpointer::wal_checkpointer(const std::filesystem::path& file, int pages, int inline_pages)
    : pages_{pages}, inline_pages_{inline_pages} {
  // Used by its thread alone: no mutex of SQLite's is needed.
  if (sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error("cannot open " + file.string() + " to checkpoint it: " + why);
  }
  // As the writers' connection: the WAL is synced before a checkpoint, the database after it.
  sqlite3_exec(db_, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
  thread_ = std::thread{[this] { run(); }};
}

wal_checkpointer::~wal_checkpointer() {
  {
    std::lock_guard lock{mutex_};
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  sqlite3_close(db_);
}

void wal_checkpointer::committed(sqlite3* writer, int wal_pages) {
  latest_ = wal_pages;
  if (wal_pages >= inline_pages_) {
    if (int done = checkpoint(writer); done >= 0) {
      backfilled_ = done;
      ++checkpoints_;
    }
    return;
  }
  if (backfilled_.load() > wal_pages)
    backfilled_ = 0;  // the WAL has started again
  if (not_checkpointed() < pages_)
    return;
  {
    std::lock_guard lock{mutex_};
    if (asked_)
      return;  // the thread has been woken already
    asked_ = true;
  }
  wake_.notify_one();
}

int wal_checkpointer::not_checkpointed() const {
  return latest_.load() - backfilled_.load();
}

void wal_checkpointer::run() {
  std::unique_lock lock{mutex_};
  for (;;) {
    wake_.wait(lock, [this] { return asked_ || stop_; });
    if (stop_)
      return;
    lock.unlock();
    // An ask that an inline checkpoint has answered meanwhile is dropped. Run anyway, such a
    // checkpoint (nothing to copy) kept the writer's next commits from starting the WAL again
    // (it locks the WAL's read marks for a moment): in the bench they appended at 4,001 and
    // 4,002 frames, and each checkpointed inline again, 9 ms apiece.
    if (not_checkpointed() >= pages_) {
      if (int done = checkpoint(db_); done >= 0) {
        backfilled_ = done;
        ++checkpoints_;
      }
    }
    lock.lock();
    asked_ = false;  // a commit from now on may ask again
  }
}

} // namespace cdui::storage
