// The store's sweeps and studies: a record each, and its runs with their params by place.
#include "storage/run_store_sql.hpp"

namespace cdui::storage {

namespace {

constexpr const char* sweep_columns =
  "id, name, graph, spec, objective, options, state, cancel_asked, created_ms, finished_ms";

constexpr search_tables sweep_tables{"sweeps", "sweep_runs", "sweep_id"};
constexpr search_tables study_tables{"studies", "study_trials", "study_id"};

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

} // namespace

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

} // namespace cdui::storage
