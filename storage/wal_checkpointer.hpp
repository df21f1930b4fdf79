#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <thread>

struct sqlite3;

namespace cdui::storage {

/// SQLite's auto-checkpoint copies the WAL into the database inside the commit that crosses its
/// threshold, with two fsyncs: that commit's caller waits milliseconds, once every few hundred
/// submits. A wal_checkpointer does that copying on a thread of its own, over its own connection,
/// while writers go on (PASSIVE checkpoints: they never wait for a writer or a reader).
///
/// A writer that never pauses keeps a few frames ahead of any checkpoint, and the WAL starts again
/// from its beginning only once every frame is in the database. So a commit that leaves
/// `inline_pages` frames checkpoints on its own connection, as SQLite's auto-checkpoint does, the
/// bulk of the frames being in the database already: the WAL stays bounded.
class wal_checkpointer {
public:
  /// Opens `file` (a database in WAL mode) and starts the thread. Throws std::runtime_error when
  /// the file cannot be opened.
  wal_checkpointer(const std::filesystem::path& file, int pages, int inline_pages);
  /// Stops the thread (after the checkpoint under way, if any) and closes its connection.
  ~wal_checkpointer();
  wal_checkpointer(const wal_checkpointer&) = delete;
  wal_checkpointer& operator=(const wal_checkpointer&) = delete;

  /// A commit on `writer` left `wal_pages` frames in the WAL (sqlite3_wal_hook's count). Wakes the
  /// thread once `pages` frames are not in the database yet; at `inline_pages`, checkpoints on
  /// `writer` before it returns.
  void committed(sqlite3* writer, int wal_pages);
  /// How many checkpoints have completed, on the thread and inline.
  [[nodiscard]] std::uint64_t checkpoints() const { return checkpoints_.load(); }

private:
  void run();
  /// The frames of the WAL after the last commit that no checkpoint has put in the database yet
  /// (negative for a moment after the WAL starts again).
  [[nodiscard]] int not_checkpointed() const;

  sqlite3* db_ = nullptr;
  int pages_;
  int inline_pages_;
  /// The WAL's frames the last checkpoint left in the database (0 once the WAL starts again).
  std::atomic<int> backfilled_{0};
  /// The WAL's frames after the last commit.
  std::atomic<int> latest_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool asked_ = false;  // under mutex_
  bool stop_ = false;   // under mutex_
  std::atomic<std::uint64_t> checkpoints_{0};
  std::thread thread_;
};

} // namespace cdui::storage
