// The store's one connection and its schema: opened private, in WAL mode, checked, given its
// tables; closed after its checkpointer.
#include <fcntl.h>
#include <unistd.h>

#include "storage/home.hpp"
#include "storage/run_store_sql.hpp"
#include "storage/wal_checkpointer.hpp"

namespace cdui::storage {

namespace {

constexpr const char* schema = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  graph TEXT NOT NULL,
  options TEXT NOT NULL,
  status TEXT NOT NULL,
  error TEXT NOT NULL,
  queue_key TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  final_metrics TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs(status, seq);
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT NOT NULL,
  cursor INTEGER NOT NULL,
  time_ms INTEGER NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (run_id, cursor)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS metrics (
  run_id TEXT NOT NULL,
  node TEXT NOT NULL,
  name TEXT NOT NULL,
  step INTEGER NOT NULL,
  value REAL NOT NULL,
  time_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS metrics_by_run ON metrics(run_id, name);
CREATE TABLE IF NOT EXISTS artifacts (
  run_id TEXT NOT NULL,
  path TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  PRIMARY KEY (run_id, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS workers (
  name TEXT PRIMARY KEY,
  credential_hash TEXT NOT NULL,
  enrolled_ms INTEGER NOT NULL,
  rekeyed_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS measured_peaks (
  memory_key TEXT NOT NULL,
  cards INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  run_id TEXT NOT NULL,
  measured_ms INTEGER NOT NULL,
  PRIMARY KEY (memory_key, cards)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS measured_contexts (
  card TEXT PRIMARY KEY,
  held_bytes INTEGER NOT NULL,
  held_run TEXT NOT NULL,
  created_bytes INTEGER NOT NULL,
  created_run TEXT NOT NULL,
  measured_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sweeps (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  graph TEXT NOT NULL,
  spec TEXT NOT NULL,
  objective TEXT NOT NULL,
  options TEXT NOT NULL,
  state TEXT NOT NULL,
  cancel_asked INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sweep_runs (
  sweep_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  run_id TEXT NOT NULL,
  params TEXT NOT NULL,
  PRIMARY KEY (sweep_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS studies (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  graph TEXT NOT NULL,
  spec TEXT NOT NULL,
  objective TEXT NOT NULL,
  options TEXT NOT NULL,
  state TEXT NOT NULL,
  cancel_asked INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS study_trials (
  study_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  run_id TEXT NOT NULL,
  params TEXT NOT NULL,
  PRIMARY KEY (study_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS worker_starts (
  run_id TEXT PRIMARY KEY,
  cursor_base INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS shared_cards (
  offerer TEXT NOT NULL,
  device TEXT NOT NULL,
  shared_ms INTEGER NOT NULL,
  PRIMARY KEY (offerer, device)
) WITHOUT ROWID;
)sql";

/// Every column each table must have: what this build reads and writes. A store that lacks one
/// is not a cdui store of this version.
constexpr const char* required_columns[] = {
  ("SELECT seq, id, name, graph, options, status, error, queue_key, created_ms, started_ms, "
   "finished_ms, final_metrics FROM runs LIMIT 0"),
  "SELECT run_id, cursor, time_ms, type, data FROM events LIMIT 0",
  "SELECT run_id, node, name, step, value, time_ms FROM metrics LIMIT 0",
  "SELECT run_id, path, bytes FROM artifacts LIMIT 0",
  "SELECT name, credential_hash, enrolled_ms, rekeyed_ms FROM workers LIMIT 0",
  "SELECT offerer, device, shared_ms FROM shared_cards LIMIT 0",
  "SELECT run_id, cursor_base FROM worker_starts LIMIT 0",
  "SELECT memory_key, cards, bytes, run_id, measured_ms FROM measured_peaks LIMIT 0",
  "SELECT card, held_bytes, held_run, created_bytes, created_run, measured_ms FROM measured_contexts LIMIT 0",
  ("SELECT seq, id, name, graph, spec, objective, options, state, cancel_asked, created_ms, "
   "finished_ms FROM sweeps LIMIT 0"),
  "SELECT sweep_id, idx, run_id, params FROM sweep_runs LIMIT 0",
  ("SELECT seq, id, name, graph, spec, objective, options, state, cancel_asked, created_ms, "
   "finished_ms FROM studies LIMIT 0"),
  "SELECT study_id, idx, run_id, params FROM study_trials LIMIT 0",
};

/// SQLite's codes for a file that is not a database in working order.
bool is_damage(int code) {
  auto primary = code & 0xff;
  return primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT;
}

/// The first problem PRAGMA quick_check finds, empty when it answers ok. quick_check rather than
/// integrity_check: it reads every page too, but skips comparing each index with its table
/// (measured on 6000 runs of 400 events, 278 MiB: 400 ms against 510 ms).
std::string quick_check(sqlite3* db) {
  statement s{db, "PRAGMA quick_check"};
  if (!s.step())
    return "PRAGMA quick_check gave no answer";
  auto first = s.text(0);
  return first == "ok" ? "" : first;
}

/// A new store is created 0600 here, so SQLite gives its -wal and -shm files that mode too (it
/// copies the database's); an existing one of this user is narrowed to 0600.
void make_store_private(const std::filesystem::path& file) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    // A file that did not exist: nobody holds SQLite locks on it that this close could drop.
    ::close(fd);
    return;
  }
  for (const char* suffix : {"", "-wal", "-shm"})
    make_private(file.string() + suffix);
}

} // namespace

run_store::run_store(const std::filesystem::path& file, check depth)
    : statements_{std::make_unique<statement_cache>()} {
  make_store_private(file);
  if (sqlite3_open(file.c_str(), &db_) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error("cannot open the run store " + file.string() + ": " + why);
  }
  try {
    sqlite3_busy_timeout(db_, 5000);
    exec(db_, "PRAGMA journal_mode=WAL");
    // WAL with synchronous=NORMAL survives a crash of the process; only a power loss can undo the
    // last commits.
    exec(db_, "PRAGMA synchronous=NORMAL");
    exec(db_, "PRAGMA foreign_keys=ON");
    // Checked before the schema is applied: nothing is written into a damaged file.
    if (auto problem = depth == check::whole ? quick_check(db_) : ""; !problem.empty())
      throw damaged_store(problem);
    exec(db_, schema);
    for (const char* columns : required_columns)
      statement{db_, columns};
  } catch (const std::exception& e) {
    bool damaged = dynamic_cast<const damaged_store*>(&e) != nullptr
                   || is_damage(sqlite3_errcode(db_)) || sqlite3_errcode(db_) == SQLITE_ERROR;
    sqlite3_close(db_);
    if (damaged)
      throw damaged_store("the run store " + file.string() + " is damaged or is not a cdui store ("
                          + e.what() + "), so cdui does not start on it: move it away (with its "
                          "-wal and -shm files, e.g. mv " + file.string() + " " + file.string()
                          + ".damaged) to start with an empty store, or put back a copy of it");
    throw std::runtime_error("cannot open the run store " + file.string() + ": " + e.what());
  }
}

run_store::~run_store() {
  // Its connection first: closing the last one, db_'s, checkpoints the WAL and deletes it.
  if (checkpointer_)
    sqlite3_wal_hook(db_, nullptr, nullptr);
  checkpointer_.reset();
  statements_->clear();
  sqlite3_close(db_);
}

void run_store::checkpoint_in_background(int pages, int inline_pages) {
  std::lock_guard lock{mutex_};
  if (checkpointer_)
    throw std::logic_error("run_store::checkpoint_in_background called twice");
  checkpointer_ = std::make_unique<wal_checkpointer>(sqlite3_db_filename(db_, "main"), pages, inline_pages);
  // The hook replaces SQLite's auto-checkpoint (which is one such hook).
  sqlite3_wal_hook(
    db_,
    [](void* checkpointer, sqlite3* writer, const char*, int wal_pages) {
      static_cast<wal_checkpointer*>(checkpointer)->committed(writer, wal_pages);
      return SQLITE_OK;
    },
    checkpointer_.get());
}

std::uint64_t run_store::background_checkpoints() const {
  std::lock_guard lock{mutex_};
  return checkpointer_ ? checkpointer_->checkpoints() : 0;
}

} // namespace cdui::storage
