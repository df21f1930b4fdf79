#pragma once
// What the files of run_store (storage/run_store*.cpp) share inside the store: prepared
// statements, transactions, and how a run's row is written and read. Internal: not installed.

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

#include <sqlite3.h>

#include "storage/run_store.hpp"
#include "storage/sqlite_failure.hpp"

namespace cdui::storage {

/// A sweep's or a study's tables: its record, and its runs with their params by place.
struct search_tables {
  const char* records;
  const char* links;
  const char* owner;  // the links' column naming the record
};

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

inline void exec(sqlite3* db, const char* sql) {
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

inline constexpr const char* run_columns =
  "id, name, status, queue_key, error, created_ms, started_ms, finished_ms, final_metrics, "
  "options, graph";

inline constexpr const char* prefixed_run_columns =
  "r.id, r.name, r.status, r.queue_key, r.error, r.created_ms, r.started_ms, r.finished_ms, "
  "r.final_metrics, r.options, r.graph";

inline constexpr const char* insert_run_sql =
  "INSERT INTO runs (id, name, graph, options, status, error, queue_key, created_ms, started_ms, "
  "finished_ms, final_metrics) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO NOTHING";

/// Inserts `run` through insert_run_sql. While its id is in the store already, it is given
/// `fresh_id()` and inserted again; without a `fresh_id`, a taken id is an error.
inline void insert_run(sqlite3* db, statement& s, stored_run& run, const id_source& fresh_id) {
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

inline std::string sql(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (auto p : parts)
    out += p;
  return out;
}

inline stored_run read_run(const statement& s) {
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

} // namespace cdui::storage
