#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "messages/run_event.hpp"
#include "messages/run_request.hpp"
#include "messages/sweep.hpp"

struct sqlite3;

namespace cdui::storage {

class wal_checkpointer;

/// A sweep's or a study's tables (run_store_sql.hpp).
struct search_tables;
class statement_cache;

/// A new id for a run whose id is taken (run_store's inserts).
using id_source = std::function<std::string()>;

/// A run as the store keeps it: what anyone may ask, plus the graph it executes.
struct stored_run {
  run_info info;
  std::string graph_json;
};

/// One metric point: a metric event of a node, kept in its own table for queries.
struct metric_point {
  std::string node;
  std::string name;
  std::int64_t step = 0;
  double value = 0.0;
  std::int64_t time_ms = 0;
};

/// A file a run left behind (a checkpoint), relative to its run folder.
struct artifact {
  std::string path;
  std::uint64_t bytes = 0;
};

/// A remote worker an operator enrolled: its name and the SHA-256 of its credential (the
/// credential itself is never stored). `rekeyed_ms` is 0 until it is re-keyed.
/// The peak memory per card of the last succeeded run of a graph (its memory key) on a number of
/// cards: the measured default budget of the next run of that graph is this + 20%.
struct measured_peak_row {
  std::int64_t bytes = 0;
  std::string run_id;
  std::int64_t measured_ms = 0;
};

/// The CUDA context runs on a card measured (docs/gpu.md, "The CUDA context"; policy::card_context):
/// the largest whole figure and the largest bare context, each with its run (0 bytes: none yet).
struct measured_context_row {
  std::int64_t held_bytes = 0;
  std::string held_run;
  std::int64_t created_bytes = 0;
  std::string created_run;
  std::int64_t measured_ms = 0;
};

/// A card an operator set Shared by memory (docs/http-api.md, "Cards shared by memory").
struct shared_card {
  std::string offerer;  // a worker's name; empty: this server
  std::string device;
  std::int64_t shared_ms = 0;
};

struct enrolled_worker {
  std::string name;
  std::string credential_hash;
  std::int64_t enrolled_ms = 0;
  std::int64_t rekeyed_ms = 0;
};

/// Which runs a page lists, each field unset for all: of one status; on one worker (its name, or
/// `local` for this server); on one device (`sim:0`: the device of the run's queue key on any
/// machine, the first of a device set; with a worker, that worker's).
struct run_filter {
  std::optional<run_status> status;
  std::string worker;
  std::string device;
};

/// One page of runs, newest first, and how many match in all.
struct run_page {
  std::vector<run_info> runs;
  std::uint64_t total = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_page& x) {
  return f(x.runs, x.total);
}

/// The store file is not a cdui store in working order (overwritten, truncated, damaged, another
/// program's database). A std::invalid_argument, as a bad setting is: `cdui start` exits 2 naming
/// the file instead of starting on it.
class damaged_store : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// The durable record of every run: $CODEFYUI_HOME/cdui.db, SQLite in WAL mode. Runs, their events
/// (cursor per run, 1-based, gap-free), metrics (from metric events) and artifacts, and the
/// enrolled workers. Every write is
/// committed before the call returns. Thread-safe: one connection behind a mutex; several processes
/// may open the same file (SQLite locks it; a writer waits up to 5 s for another).
class run_store {
public:
  /// How much opening checks: `whole` reads every page (PRAGMA quick_check: about 140 ms for
  /// 6000 runs of 100 events, 87 MiB, and 400 ms for 278 MiB, warm); `tables` only that every
  /// table has the columns this build reads (for a quick `cdui runs`).
  enum class check { whole, tables };

  /// Opens or creates the database (mode 0600, as SQLite then makes its -wal and -shm files) and
  /// checks it. Throws damaged_store naming the file when the check fails, std::runtime_error
  /// naming it when it cannot be opened for another reason (permissions, a full disk, a lock held
  /// too long).
  explicit run_store(const std::filesystem::path& file, check depth = check::whole);
  ~run_store();
  run_store(const run_store&) = delete;
  run_store& operator=(const run_store&) = delete;

  /// From now on the WAL is checkpointed on a thread of this store's (wal_checkpointer) once
  /// `pages` of its frames are not in the database, instead of inside the commit that crosses
  /// SQLite's threshold: a writer waits for a checkpoint's fsyncs only when it has left
  /// `inline_pages` frames in the WAL. For a long-lived writer, the server; called once.
  void checkpoint_in_background(int pages = default_checkpoint_pages,
                                int inline_pages = default_inline_checkpoint_pages);
  /// How many checkpoints have completed since checkpoint_in_background (0 without it).
  [[nodiscard]] std::uint64_t background_checkpoints() const;
  /// SQLite's own auto-checkpoint threshold (4 MiB of 4 KiB pages).
  static constexpr int default_checkpoint_pages = 1000;
  /// A writer that never pauses checkpoints inline once every 4,000 frames (16 MiB of WAL).
  static constexpr int default_inline_checkpoint_pages = 4000;

  /// Records a new run; its submit order is the order of these calls. Its id must be new.
  void insert(const stored_run& run);
  /// Records new runs in their order in one transaction (one commit for many submits): all of
  /// them or, on an error, none. A run whose id is in the store already is given `fresh_id()`
  /// (until one is free) and recorded under it, so runs[i].info.id is the id it has now; without
  /// a `fresh_id`, a taken id is an error. (The id's check costs no read of its own.)
  void insert(std::vector<stored_run>& runs, const id_source& fresh_id = {});

  /// Records a sweep with all its runs (in their order) and each one's params, in one transaction:
  /// all of them or, on an error, none. Taken ids as for insert().
  void insert_sweep(const sweep_record& sweep, std::vector<stored_run>& runs,
                    const std::vector<std::string>& params, const id_source& fresh_id = {});
  /// Writes a sweep's state, cancel_asked and finished_ms.
  void update_sweep(const sweep_record& sweep);
  [[nodiscard]] std::optional<sweep_record> find_sweep(const std::string& id) const;
  /// Sweeps newest first; `active_only`: those still active, oldest first (what a restart picks up).
  [[nodiscard]] std::vector<sweep_record> sweeps(bool active_only = false) const;
  /// A sweep's variants in order, each with its run as stored now (an erased run is left out).
  [[nodiscard]] std::vector<sweep_child> sweep_children(const std::string& sweep_id) const;

  /// A study keeps the fields a sweep does (its spec is the search, study_spec_json) in `studies`,
  /// and its trials in `study_trials` (number, run, params). Records trial `number` of study
  /// `study_id` with its run in one transaction, and the study itself when `study` is given (with
  /// its first trial). A trial recorded already (its run ended interrupted by a restart) is linked
  /// to the new run instead.
  void insert_trial(const sweep_record* study, const std::string& study_id, std::size_t number,
                    stored_run& run, const std::string& params, const id_source& fresh_id = {});
  void update_study(const sweep_record& study);
  [[nodiscard]] std::optional<sweep_record> find_study(const std::string& id) const;
  /// Studies newest first; `active_only`: those still active, oldest first.
  [[nodiscard]] std::vector<sweep_record> studies(bool active_only = false) const;
  /// A study's trials by number, each with its run as stored now.
  [[nodiscard]] std::vector<sweep_child> study_trials(const std::string& study_id) const;

  /// Writes the run's status, error, times, queue key, final metrics and options (a budget given or
  /// raised while it waited).
  void update(const run_info& info);

  /// A worker run starts: update(info) (running), and the cursor of its last event before any of
  /// its worker's, in one transaction. The worker numbers its events from 1, so after a restart
  /// the server knows how many it has of them (worker_cursor_base) and whether it has any.
  void record_worker_start(const run_info& info, std::uint64_t cursor_base);
  /// The cursor record_worker_start gave the run; 0 when it has none (a store older than it).
  [[nodiscard]] std::uint64_t worker_cursor_base(const std::string& run_id) const;

  /// Appends an event (its cursor must be the run's last + 1). A metric event
  /// {node, name, step, value} also becomes a metric row, in the same transaction.
  void append_event(const std::string& run_id, const run_event& event);

  /// Appends several events in one transaction (all or none): a busy run's events cost one commit
  /// per batch, not one per event.
  void append_events(const std::string& run_id, const std::vector<run_event>& events);

  /// Events with a cursor above `cursor`, oldest first, at most `limit`.
  [[nodiscard]] std::vector<run_event> events_after(const std::string& run_id,
                                                    std::uint64_t cursor,
                                                    std::size_t limit) const;

  /// The cursor of the run's last event, 0 when it has none.
  [[nodiscard]] std::uint64_t last_cursor(const std::string& run_id) const;

  /// The run's newest event of `type` (its latest `progress`, say); nullopt when it has none.
  [[nodiscard]] std::optional<run_event> last_event(const std::string& run_id,
                                                    const std::string& type) const;

  [[nodiscard]] std::optional<stored_run> find(const std::string& run_id) const;

  /// Runs newest first, optionally of one status; `limit` 0 means all.
  [[nodiscard]] run_page list(std::optional<run_status> status, std::size_t limit,
                              std::size_t offset) const;
  /// Runs newest first that `filter` admits; `limit` 0 means all.
  [[nodiscard]] run_page list(const run_filter& filter, std::size_t limit, std::size_t offset) const;

  /// Runs that were queued or running, in submit order (what a restart picks up).
  [[nodiscard]] std::vector<stored_run> unfinished() const;

  /// Metric points of a run in the order they were recorded; `name` empty: every metric.
  [[nodiscard]] std::vector<metric_point> metrics(const std::string& run_id,
                                                  const std::string& name) const;

  void add_artifact(const std::string& run_id, const artifact& file);
  [[nodiscard]] std::vector<artifact> artifacts(const std::string& run_id) const;

  /// How many runs have each status.
  [[nodiscard]] std::map<run_status, std::size_t> count_by_status() const;

  /// How many runs of `status` ended with each error sentence (failed runs' reasons).
  [[nodiscard]] std::map<std::string, std::size_t> count_by_error(run_status status) const;

  /// Deletes the run and everything recorded about it; false when there was no such run.
  bool erase(const std::string& run_id);

  /// Enrolls a worker, or replaces its credential hash and rekeyed_ms (re-key), keeping the
  /// enrolled_ms it has.
  void put_worker(const enrolled_worker& worker);
  /// Revokes a worker's enrollment; false when it had none.
  bool remove_worker(const std::string& name);
  /// Every enrolled worker, by name.
  [[nodiscard]] std::vector<enrolled_worker> enrolled_workers() const;

  /// Sets a card Shared by memory, or back to Exclusive (the default, kept as no row). `offerer`
  /// is a worker's name, empty for this server's own devices.
  void set_shared(const std::string& offerer, const std::string& device, bool shared,
                  std::int64_t now_ms);
  /// Every card set Shared by memory, by offerer and device.
  [[nodiscard]] std::vector<shared_card> shared_cards() const;

  /// Records the peak of a succeeded run of the graph with `memory_key` on `cards` cards; it
  /// replaces the one before (the last succeeded run's counts).
  void put_peak(const std::string& memory_key, int cards, const measured_peak_row& peak);
  [[nodiscard]] std::optional<measured_peak_row> peak(const std::string& memory_key, int cards) const;

  /// Records what runs measured of the CUDA context on `card` (policy::card_id: its UUID where
  /// known), replacing the row before.
  void put_context(const std::string& card, const measured_context_row& context);
  [[nodiscard]] std::optional<measured_context_row> context(const std::string& card) const;

private:
  /// Writes a sweep's or a study's row, under the caller's lock and transaction.
  void insert_record(const search_tables& t, const sweep_record& record);
  void update_record(const search_tables& t, const sweep_record& record);
  [[nodiscard]] std::optional<sweep_record> find_record(const search_tables& t, const std::string& id) const;
  [[nodiscard]] std::vector<sweep_record> records(const search_tables& t, bool active_only) const;
  [[nodiscard]] std::vector<sweep_child> children(const search_tables& t, const std::string& owner_id) const;

  sqlite3* db_ = nullptr;
  mutable std::mutex mutex_;
  /// Prepared statements by SQL text, used under mutex_.
  std::unique_ptr<statement_cache> statements_;
  std::unique_ptr<wal_checkpointer> checkpointer_;  // closed before db_
};

} // namespace cdui::storage
