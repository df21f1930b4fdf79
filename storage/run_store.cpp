#include "storage/run_store.hpp"

#include <stdexcept>
#include <string>
#include <unordered_map>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "storage/home.hpp"
#include "storage/sqlite_failure.hpp"
#include "storage/wal_checkpointer.hpp"

namespace cdui::storage {

/// A sweep's or a study's tables: its record, and its runs with their params by place.
struct search_tables {
  const char* records;
  const char* links;
  const char* owner;  // the links' column naming the record
};

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

} // namespace

/// Prepared statements kept for the store's life, one per SQL text: preparing a run's INSERT
/// cost more than stepping it (issue 16's profile of a submit). Used under the store's mutex.
class statement_cache {
public:
  struct entry {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  statement_cache() = default;
  statement_cache(const statement_cache&) = delete;
  statement_cache& operator=(const statement_cache&) = delete;
  ~statement_cache() { clear(); }

  /// Finalizes every statement: before the connection closes.
  void clear() {
    for (auto& [sql, e] : entries_)
      sqlite3_finalize(e.stmt);
    entries_.clear();
  }
  /// The entry for `sql`, created empty when new.
  entry& operator[](const char* sql) { return entries_[sql]; }

private:
  std::unordered_map<std::string, entry> entries_;
};

namespace {

/// A prepared statement. Made from the store's cache it is borrowed and reset for the next use
/// when it goes out of scope; otherwise (or when the cached one is in use) finalized then.
class statement {
public:
  statement(sqlite3* db, const char* sql) : db_(db) { prepare(sql); }
  statement(sqlite3* db, statement_cache& cache, const char* sql) : db_(db) {
    auto& e = cache[sql];
    if (e.in_use) {
      prepare(sql);
      return;
    }
    if (!e.stmt) {
      prepare(sql);
      e.stmt = stmt_;
    }
    stmt_ = e.stmt;
    borrowed_ = &e;
    e.in_use = true;
  }
  ~statement() {
    if (!borrowed_) {
      sqlite3_finalize(stmt_);
      return;
    }
    reset();
    borrowed_->in_use = false;
  }
  /// Ready to step again with new bindings.
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  statement& bind(int i, const std::string& text) {
    sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    return *this;
  }
  statement& bind(int i, std::int64_t x) {
    sqlite3_bind_int64(stmt_, i, x);
    return *this;
  }
  statement& bind(int i, double x) {
    sqlite3_bind_double(stmt_, i, x);
    return *this;
  }

  /// Steps once: true while a row is available.
  bool step() {
    auto rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW)
      return true;
    if (rc == SQLITE_DONE)
      return false;
    throw_store_failure(db_);
  }

  std::string text(int col) const {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string{p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))} : "";
  }
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }

private:
  void prepare(const char* sql) {
    if (sqlite3_prepare_v2(db_, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string{"SQLite cannot prepare a statement: "} + sqlite3_errmsg(db_));
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  statement_cache::entry* borrowed_ = nullptr;
};

void exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
    throw_store_failure(db);
}

/// BEGIN IMMEDIATE ... COMMIT, rolled back when an exception leaves the scope.
class transaction {
public:
  explicit transaction(sqlite3* db) : db_(db) { exec(db_, "BEGIN IMMEDIATE"); }
  ~transaction() {
    if (!done_)
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec(db_, "COMMIT");
    done_ = true;
  }

private:
  sqlite3* db_;
  bool done_ = false;
};

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

constexpr const char* run_columns =
  "id, name, status, queue_key, error, created_ms, started_ms, finished_ms, final_metrics, "
  "options, graph";

constexpr const char* prefixed_run_columns =
  "r.id, r.name, r.status, r.queue_key, r.error, r.created_ms, r.started_ms, r.finished_ms, "
  "r.final_metrics, r.options, r.graph";

constexpr const char* insert_run_sql =
  "INSERT INTO runs (id, name, graph, options, status, error, queue_key, created_ms, started_ms, "
  "finished_ms, final_metrics) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO NOTHING";

/// Inserts `run` through insert_run_sql. While its id is in the store already, it is given
/// `fresh_id()` and inserted again; without a `fresh_id`, a taken id is an error.
void insert_run(sqlite3* db, statement& s, stored_run& run, const id_source& fresh_id) {
  for (;;) {
    const auto& i = run.info;
    s.reset();
    s.bind(1, i.id).bind(2, i.name).bind(3, run.graph_json).bind(4, i.options);
    s.bind(5, std::string{to_string(i.status)}).bind(6, i.error).bind(7, i.queue_key);
    s.bind(8, i.created_ms).bind(9, i.started_ms).bind(10, i.finished_ms).bind(11, i.final_metrics);
    s.step();
    if (sqlite3_changes(db) == 1)
      return;
    if (!fresh_id)
      throw std::runtime_error("SQLite: run id '" + i.id + "' is in the store already");
    run.info.id = fresh_id();
  }
}

constexpr const char* sweep_columns =
  "id, name, graph, spec, objective, options, state, cancel_asked, created_ms, finished_ms";

constexpr search_tables sweep_tables{"sweeps", "sweep_runs", "sweep_id"};
constexpr search_tables study_tables{"studies", "study_trials", "study_id"};

std::string sql(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (auto p : parts)
    out += p;
  return out;
}

sweep_record read_sweep(const statement& s) {
  sweep_record w;
  w.id = s.text(0);
  w.name = s.text(1);
  w.graph_json = s.text(2);
  w.spec = s.text(3);
  w.objective = s.text(4);
  w.options = s.text(5);
  w.state = s.text(6);
  w.cancel_asked = s.integer(7) != 0;
  w.created_ms = s.integer(8);
  w.finished_ms = s.integer(9);
  return w;
}

stored_run read_run(const statement& s) {
  stored_run r;
  r.info.id = s.text(0);
  r.info.name = s.text(1);
  r.info.status = parse_run_status(s.text(2)).value_or(run_status::failed);
  r.info.queue_key = s.text(3);
  r.info.error = s.text(4);
  r.info.created_ms = s.integer(5);
  r.info.started_ms = s.integer(6);
  r.info.finished_ms = s.integer(7);
  r.info.final_metrics = s.text(8);
  r.info.options = s.text(9);
  r.graph_json = s.text(10);
  return r;
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

void run_store::insert(const stored_run& run) {
  auto copy = run;
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, insert_run_sql};
  insert_run(db_, s, copy, {});
}

void run_store::insert(std::vector<stored_run>& runs, const id_source& fresh_id) {
  std::lock_guard lock{mutex_};
  transaction tx{db_};
  statement s{db_, *statements_, insert_run_sql};
  for (auto& run : runs)
    insert_run(db_, s, run, fresh_id);
  tx.commit();
}

void run_store::insert_record(const search_tables& t, const sweep_record& record) {
  statement w{db_, *statements_, sql({"INSERT INTO ", t.records, " (id, name, graph, spec, objective, options, state, "
                        "cancel_asked, created_ms, finished_ms) VALUES (?,?,?,?,?,?,?,?,?,?)"}).c_str()};
  w.bind(1, record.id).bind(2, record.name).bind(3, record.graph_json).bind(4, record.spec);
  w.bind(5, record.objective).bind(6, record.options).bind(7, record.state);
  w.bind(8, std::int64_t{record.cancel_asked}).bind(9, record.created_ms).bind(10, record.finished_ms);
  w.step();
}

void run_store::insert_sweep(const sweep_record& sweep, std::vector<stored_run>& runs,
                             const std::vector<std::string>& params, const id_source& fresh_id) {
  std::lock_guard lock{mutex_};
  transaction tx{db_};
  insert_record(sweep_tables, sweep);
  statement r{db_, *statements_, insert_run_sql};
  statement link{db_, *statements_, "INSERT INTO sweep_runs (sweep_id, idx, run_id, params) VALUES (?,?,?,?)"};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    insert_run(db_, r, runs[i], fresh_id);
    link.reset();
    link.bind(1, sweep.id).bind(2, static_cast<std::int64_t>(i)).bind(3, runs[i].info.id);
    link.bind(4, i < params.size() ? params[i] : std::string{"{}"});
    link.step();
  }
  tx.commit();
}

void run_store::insert_trial(const sweep_record* study, const std::string& study_id, std::size_t number,
                             stored_run& run, const std::string& params, const id_source& fresh_id) {
  std::lock_guard lock{mutex_};
  transaction tx{db_};
  if (study)
    insert_record(study_tables, *study);
  statement r{db_, *statements_, insert_run_sql};
  insert_run(db_, r, run, fresh_id);
  statement link{db_, *statements_, "INSERT OR REPLACE INTO study_trials (study_id, idx, run_id, params) VALUES (?,?,?,?)"};
  link.bind(1, study_id).bind(2, static_cast<std::int64_t>(number)).bind(3, run.info.id).bind(4, params);
  link.step();
  tx.commit();
}

void run_store::update_record(const search_tables& t, const sweep_record& record) {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, sql({"UPDATE ", t.records, " SET state=?, cancel_asked=?, finished_ms=? WHERE id=?"}).c_str()};
  s.bind(1, record.state).bind(2, std::int64_t{record.cancel_asked}).bind(3, record.finished_ms);
  s.bind(4, record.id);
  s.step();
}

std::optional<sweep_record> run_store::find_record(const search_tables& t, const std::string& id) const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, sql({"SELECT ", sweep_columns, " FROM ", t.records, " WHERE id=?"}).c_str()};
  s.bind(1, id);
  if (!s.step())
    return std::nullopt;
  return read_sweep(s);
}

std::vector<sweep_record> run_store::records(const search_tables& t, bool active_only) const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, sql({"SELECT ", sweep_columns, " FROM ", t.records,
                        active_only ? " WHERE state='active' ORDER BY seq" : " ORDER BY seq DESC"})
                     .c_str()};
  std::vector<sweep_record> out;
  while (s.step())
    out.push_back(read_sweep(s));
  return out;
}

std::vector<sweep_child> run_store::children(const search_tables& t, const std::string& owner_id) const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, sql({"SELECT ", prefixed_run_columns, ", l.idx, l.params FROM ", t.links,
                        " l JOIN runs r ON r.id = l.run_id WHERE l.", t.owner, "=? ORDER BY l.idx"})
                     .c_str()};
  s.bind(1, owner_id);
  std::vector<sweep_child> out;
  while (s.step()) {
    sweep_child c;
    c.run = read_run(s).info;
    c.index = static_cast<std::size_t>(s.integer(11));
    c.params = s.text(12);
    out.push_back(std::move(c));
  }
  return out;
}

void run_store::update_sweep(const sweep_record& sweep) {
  update_record(sweep_tables, sweep);
}

std::optional<sweep_record> run_store::find_sweep(const std::string& id) const {
  return find_record(sweep_tables, id);
}

std::vector<sweep_record> run_store::sweeps(bool active_only) const {
  return records(sweep_tables, active_only);
}

std::vector<sweep_child> run_store::sweep_children(const std::string& sweep_id) const {
  return children(sweep_tables, sweep_id);
}

void run_store::update_study(const sweep_record& study) {
  update_record(study_tables, study);
}

std::optional<sweep_record> run_store::find_study(const std::string& id) const {
  return find_record(study_tables, id);
}

std::vector<sweep_record> run_store::studies(bool active_only) const {
  return records(study_tables, active_only);
}

std::vector<sweep_child> run_store::study_trials(const std::string& study_id) const {
  return children(study_tables, study_id);
}

namespace {

void update_run(sqlite3* db, statement_cache& cache, const run_info& i) {
  statement s{db, cache, "UPDATE runs SET status=?, error=?, queue_key=?, started_ms=?, finished_ms=?, "
                  "final_metrics=?, options=? WHERE id=?"};
  s.bind(1, std::string{to_string(i.status)}).bind(2, i.error).bind(3, i.queue_key);
  s.bind(4, i.started_ms).bind(5, i.finished_ms).bind(6, i.final_metrics).bind(7, i.options).bind(8, i.id);
  s.step();
}

} // namespace

void run_store::update(const run_info& i) {
  std::lock_guard lock{mutex_};
  update_run(db_, *statements_, i);
}

void run_store::record_worker_start(const run_info& i, std::uint64_t cursor_base) {
  std::lock_guard lock{mutex_};
  transaction tx{db_};
  statement s{db_, *statements_, "INSERT INTO worker_starts (run_id, cursor_base) VALUES (?, ?) "
                   "ON CONFLICT(run_id) DO UPDATE SET cursor_base = excluded.cursor_base"};
  s.bind(1, i.id).bind(2, static_cast<std::int64_t>(cursor_base));
  s.step();
  update_run(db_, *statements_, i);
  tx.commit();
}

std::uint64_t run_store::worker_cursor_base(const std::string& run_id) const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "SELECT cursor_base FROM worker_starts WHERE run_id=?"};
  s.bind(1, run_id);
  return s.step() ? static_cast<std::uint64_t>(s.integer(0)) : 0;
}

void run_store::append_event(const std::string& run_id, const run_event& e) {
  append_events(run_id, {e});
}

void run_store::append_events(const std::string& run_id, const std::vector<run_event>& events) {
  std::lock_guard lock{mutex_};
  transaction tx{db_};
  statement s{db_, *statements_, "INSERT INTO events (run_id, cursor, time_ms, type, data) VALUES (?,?,?,?,?)"};
  statement m{db_, *statements_, "INSERT INTO metrics (run_id, node, name, step, value, time_ms) "
                   "VALUES (?,?,?,?,?,?)"};
  for (const auto& e : events) {
    s.reset();
    s.bind(1, run_id).bind(2, static_cast<std::int64_t>(e.cursor)).bind(3, e.time_ms);
    s.bind(4, e.type).bind(5, e.data);
    s.step();
    if (e.type != "metric")
      continue;
    auto data = nlohmann::json::parse(e.data, nullptr, false);
    if (data.is_object() && data.value("value", nlohmann::json{}).is_number()) {
      m.reset();
      m.bind(1, run_id).bind(2, data.value("node", std::string{}));
      m.bind(3, data.value("name", std::string{})).bind(4, data.value("step", std::int64_t{0}));
      m.bind(5, data["value"].get<double>()).bind(6, e.time_ms);
      m.step();
    }
  }
  tx.commit();
}

std::vector<run_event> run_store::events_after(const std::string& run_id, std::uint64_t cursor,
                                               std::size_t limit) const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "SELECT cursor, time_ms, type, data FROM events WHERE run_id=? AND cursor>? "
                   "ORDER BY cursor LIMIT ?"};
  s.bind(1, run_id).bind(2, static_cast<std::int64_t>(cursor));
  s.bind(3, static_cast<std::int64_t>(limit));
  std::vector<run_event> out;
  while (s.step())
    out.push_back({static_cast<std::uint64_t>(s.integer(0)), s.integer(1), s.text(2), s.text(3)});
  return out;
}

std::uint64_t run_store::last_cursor(const std::string& run_id) const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "SELECT COALESCE(MAX(cursor), 0) FROM events WHERE run_id=?"};
  s.bind(1, run_id);
  s.step();
  return static_cast<std::uint64_t>(s.integer(0));
}

std::optional<run_event> run_store::last_event(const std::string& run_id, const std::string& type) const {
  std::lock_guard lock{mutex_};
  // Backwards along the primary key (run_id, cursor): a busy run's latest progress is near its end.
  statement s{db_, *statements_, "SELECT cursor, time_ms, type, data FROM events WHERE run_id=? AND type=? "
                   "ORDER BY cursor DESC LIMIT 1"};
  s.bind(1, run_id).bind(2, type);
  if (!s.step())
    return std::nullopt;
  return run_event{static_cast<std::uint64_t>(s.integer(0)), s.integer(1), s.text(2), s.text(3)};
}

std::optional<stored_run> run_store::find(const std::string& run_id) const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, (std::string{"SELECT "} + run_columns + " FROM runs WHERE id=?").c_str()};
  s.bind(1, run_id);
  if (!s.step())
    return std::nullopt;
  return read_run(s);
}

run_page run_store::list(std::optional<run_status> status, std::size_t limit,
                         std::size_t offset) const {
  return list(run_filter{status, {}, {}}, limit, offset);
}

namespace {

/// The WHERE clause of `filter` and the texts its `?` bind, in order. A worker's runs are those
/// whose queue key is `<worker>/...`; this server's, those whose key names no worker, `any` and
/// `one-shot` (not placed yet) aside.
std::pair<std::string, std::vector<std::string>> where_clause(const run_filter& filter) {
  std::string where;
  std::vector<std::string> texts;
  auto add = [&](const char* term) { where += (where.empty() ? " WHERE " : " AND ") + std::string{term}; };
  if (filter.status) {
    add("status=?");
    texts.emplace_back(to_string(*filter.status));
  }
  if (filter.worker == "local") {
    add("instr(queue_key, '/')=0 AND queue_key NOT IN ('any', 'one-shot')");
  } else if (!filter.worker.empty()) {
    add("substr(queue_key, 1, length(?))=?");
    texts.insert(texts.end(), 2, filter.worker + "/");
  }
  if (!filter.device.empty()) {
    add("(queue_key=? OR substr(queue_key, -length(?))=?)");
    texts.push_back(filter.device);
    texts.insert(texts.end(), 2, "/" + filter.device);
  }
  return {where, texts};
}

} // namespace

run_page run_store::list(const run_filter& filter, std::size_t limit, std::size_t offset) const {
  std::lock_guard lock{mutex_};
  auto [where, texts] = where_clause(filter);
  run_page page;
  {
    statement s{db_, *statements_, ("SELECT COUNT(*) FROM runs" + where).c_str()};
    for (std::size_t i = 0; i < texts.size(); ++i)
      s.bind(static_cast<int>(i + 1), texts[i]);
    s.step();
    page.total = static_cast<std::uint64_t>(s.integer(0));
  }
  statement s{db_, *statements_, (std::string{"SELECT "} + run_columns + " FROM runs" + where
                    + " ORDER BY seq DESC LIMIT ? OFFSET ?")
                     .c_str()};
  int i = 1;
  for (const auto& text : texts)
    s.bind(i++, text);
  s.bind(i++, limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
  s.bind(i, static_cast<std::int64_t>(offset));
  while (s.step())
    page.runs.push_back(read_run(s).info);
  return page;
}

std::vector<stored_run> run_store::unfinished() const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, (std::string{"SELECT "} + run_columns
                    + " FROM runs WHERE status IN ('queued', 'running') ORDER BY seq")
                     .c_str()};
  std::vector<stored_run> out;
  while (s.step())
    out.push_back(read_run(s));
  return out;
}

std::vector<metric_point> run_store::metrics(const std::string& run_id,
                                             const std::string& name) const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, name.empty() ? "SELECT node, name, step, value, time_ms FROM metrics "
                                  "WHERE run_id=? ORDER BY rowid"
                                : "SELECT node, name, step, value, time_ms FROM metrics "
                                  "WHERE run_id=? AND name=? ORDER BY rowid"};
  s.bind(1, run_id);
  if (!name.empty())
    s.bind(2, name);
  std::vector<metric_point> out;
  while (s.step())
    out.push_back({s.text(0), s.text(1), s.integer(2), s.real(3), s.integer(4)});
  return out;
}

void run_store::add_artifact(const std::string& run_id, const artifact& file) {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "INSERT OR REPLACE INTO artifacts (run_id, path, bytes) VALUES (?,?,?)"};
  s.bind(1, run_id).bind(2, file.path).bind(3, static_cast<std::int64_t>(file.bytes));
  s.step();
}

std::vector<artifact> run_store::artifacts(const std::string& run_id) const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "SELECT path, bytes FROM artifacts WHERE run_id=? ORDER BY path"};
  s.bind(1, run_id);
  std::vector<artifact> out;
  while (s.step())
    out.push_back({s.text(0), static_cast<std::uint64_t>(s.integer(1))});
  return out;
}

std::map<run_status, std::size_t> run_store::count_by_status() const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "SELECT status, COUNT(*) FROM runs GROUP BY status"};
  std::map<run_status, std::size_t> out;
  while (s.step())
    if (auto status = parse_run_status(s.text(0)))
      out[*status] = static_cast<std::size_t>(s.integer(1));
  return out;
}

std::map<std::string, std::size_t> run_store::count_by_error(run_status status) const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "SELECT error, COUNT(*) FROM runs WHERE status=? GROUP BY error"};
  s.bind(1, std::string{to_string(status)});
  std::map<std::string, std::size_t> out;
  while (s.step())
    out[s.text(0)] = static_cast<std::size_t>(s.integer(1));
  return out;
}

bool run_store::erase(const std::string& run_id) {
  std::lock_guard lock{mutex_};
  transaction tx{db_};
  for (const char* sql : {"DELETE FROM events WHERE run_id=?", "DELETE FROM metrics WHERE run_id=?",
                          "DELETE FROM artifacts WHERE run_id=?", "DELETE FROM worker_starts WHERE run_id=?"}) {
    statement s{db_, *statements_, sql};
    s.bind(1, run_id);
    s.step();
  }
  statement s{db_, *statements_, "DELETE FROM runs WHERE id=?"};
  s.bind(1, run_id);
  s.step();
  bool erased = sqlite3_changes(db_) > 0;
  tx.commit();
  return erased;
}

void run_store::put_worker(const enrolled_worker& w) {
  std::lock_guard lock{mutex_};
  // A re-key keeps the worker's enrolled_ms.
  statement s{db_, *statements_, "INSERT INTO workers (name, credential_hash, enrolled_ms, rekeyed_ms) "
                   "VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                   "credential_hash = excluded.credential_hash, rekeyed_ms = excluded.rekeyed_ms"};
  s.bind(1, w.name).bind(2, w.credential_hash).bind(3, w.enrolled_ms).bind(4, w.rekeyed_ms);
  s.step();
}

bool run_store::remove_worker(const std::string& name) {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "DELETE FROM workers WHERE name=?"};
  s.bind(1, name);
  s.step();
  return sqlite3_changes(db_) > 0;
}

std::vector<enrolled_worker> run_store::enrolled_workers() const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "SELECT name, credential_hash, enrolled_ms, rekeyed_ms FROM workers ORDER BY name"};
  std::vector<enrolled_worker> out;
  while (s.step())
    out.push_back({s.text(0), s.text(1), s.integer(2), s.integer(3)});
  return out;
}

void run_store::set_shared(const std::string& offerer, const std::string& device, bool shared,
                           std::int64_t now_ms) {
  std::lock_guard lock{mutex_};
  if (shared) {
    statement s{db_, *statements_, "INSERT OR REPLACE INTO shared_cards (offerer, device, shared_ms) VALUES (?, ?, ?)"};
    s.bind(1, offerer).bind(2, device).bind(3, now_ms);
    s.step();
  } else {
    statement s{db_, *statements_, "DELETE FROM shared_cards WHERE offerer=? AND device=?"};
    s.bind(1, offerer).bind(2, device);
    s.step();
  }
}

std::vector<shared_card> run_store::shared_cards() const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "SELECT offerer, device, shared_ms FROM shared_cards ORDER BY offerer, device"};
  std::vector<shared_card> out;
  while (s.step())
    out.push_back({s.text(0), s.text(1), s.integer(2)});
  return out;
}

void run_store::put_peak(const std::string& memory_key, int cards, const measured_peak_row& peak) {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "INSERT OR REPLACE INTO measured_peaks (memory_key, cards, bytes, run_id, "
                   "measured_ms) VALUES (?, ?, ?, ?, ?)"};
  s.bind(1, memory_key).bind(2, static_cast<std::int64_t>(cards)).bind(3, peak.bytes).bind(4, peak.run_id)
    .bind(5, peak.measured_ms);
  s.step();
}

std::optional<measured_peak_row> run_store::peak(const std::string& memory_key, int cards) const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "SELECT bytes, run_id, measured_ms FROM measured_peaks WHERE memory_key=? AND cards=?"};
  s.bind(1, memory_key).bind(2, static_cast<std::int64_t>(cards));
  if (!s.step())
    return std::nullopt;
  return measured_peak_row{s.integer(0), s.text(1), s.integer(2)};
}

} // namespace cdui::storage
