// The store's runs: their rows, events, metrics and artifacts, listed, counted and erased.
#include "storage/run_store.hpp"

#include <nlohmann/json.hpp>

#include "storage/run_store_sql.hpp"

namespace cdui::storage {

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

} // namespace cdui::storage
