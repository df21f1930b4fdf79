// The store's workers and cards: enrolled workers, cards shared by memory, the measured peaks
// that give a graph's runs their default budget, and the CUDA contexts runs measured on cards.
#include "storage/run_store_sql.hpp"

namespace cdui::storage {

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

void run_store::put_context(const std::string& card, const measured_context_row& context) {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "INSERT OR REPLACE INTO measured_contexts (card, held_bytes, held_run, "
                   "created_bytes, created_run, measured_ms) VALUES (?, ?, ?, ?, ?, ?)"};
  s.bind(1, card).bind(2, context.held_bytes).bind(3, context.held_run).bind(4, context.created_bytes)
    .bind(5, context.created_run).bind(6, context.measured_ms);
  s.step();
}

std::optional<measured_context_row> run_store::context(const std::string& card) const {
  std::lock_guard lock{mutex_};
  statement s{db_, *statements_, "SELECT held_bytes, held_run, created_bytes, created_run, measured_ms "
                   "FROM measured_contexts WHERE card=?"};
  s.bind(1, card);
  if (!s.step())
    return std::nullopt;
  return measured_context_row{s.integer(0), s.text(1), s.integer(2), s.text(3), s.integer(4)};
}

} // namespace cdui::storage
