#include <boost/test/unit_test.hpp>

#include <fstream>

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "messages/study.hpp"
#include "storage/run_store.hpp"
#include "testkit/home.hpp"

using cdui::run_status;
using cdui::storage::damaged_store;
using cdui::storage::run_store;
using cdui::storage::stored_run;

namespace {

stored_run make_run(const std::string& id, run_status status = run_status::queued) {
  stored_run r;
  r.info.id = id;
  r.info.name = "run " + id;
  r.info.status = status;
  r.info.queue_key = "sim:0";
  r.info.created_ms = 1000;
  r.info.options = R"({"device":"sim:0"})";
  r.graph_json = R"({"nodes":[]})";
  return r;
}

/// A sweep's or a study's record, active.
cdui::sweep_record make_record(const std::string& id, const std::string& name, const std::string& spec) {
  cdui::sweep_record r;
  r.id = id;
  r.name = name;
  r.graph_json = R"({"nodes":[]})";
  r.spec = spec;
  r.created_ms = 5;
  return r;
}

unsigned mode_of(const std::filesystem::path& p) {
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat(p.c_str(), &st) == 0, p);
  return st.st_mode & 07777;
}

/// Opening `file` throws damaged_store, whose text names the file and says to move it away.
void expect_damaged(const std::filesystem::path& file, run_store::check depth = run_store::check::whole) {
  try {
    run_store store{file, depth};
    BOOST_FAIL("the store opened");
  } catch (const damaged_store& e) {
    std::string text = e.what();
    BOOST_TEST(text.find("the run store " + file.string() + " is damaged") == 0u, text);
    BOOST_TEST(text.find("move it away") != std::string::npos, text);
  }
}

/// A store with `n` runs, closed (SQLite folds the WAL back into the file at the last close).
void fill(const std::filesystem::path& file, int n) {
  run_store store{file};
  for (int i = 0; i < n; ++i) {
    auto r = make_run("r" + std::to_string(i));
    r.graph_json = std::string(2000, 'g');
    store.insert(r);
  }
}

cdui::run_event event(std::uint64_t cursor, const std::string& type, const std::string& data) {
  return {cursor, 2000 + static_cast<std::int64_t>(cursor), type, data};
}

} // namespace

BOOST_AUTO_TEST_SUITE(run_store_test)

BOOST_AUTO_TEST_CASE(a_run_survives_closing_the_store_with_its_graph_options_and_status) {
  cdui::test::temp_home home;
  {
    run_store store{home.path() / "cdui.db"};
    store.insert(make_run("a1"));
    auto info = make_run("a1").info;
    info.status = run_status::succeeded;
    info.started_ms = 1500;
    info.finished_ms = 1600;
    info.final_metrics = R"({"train":{"loss":0.5}})";
    store.update(info);
  }
  run_store store{home.path() / "cdui.db"};
  auto run = store.find("a1");
  BOOST_REQUIRE(run.has_value());
  BOOST_TEST(run->info.name == "run a1");
  BOOST_TEST(run->info.status == run_status::succeeded);
  BOOST_TEST(run->info.started_ms == 1500);
  BOOST_TEST(run->info.final_metrics == R"({"train":{"loss":0.5}})");
  BOOST_TEST(run->info.options == R"({"device":"sim:0"})");
  BOOST_TEST(run->graph_json == R"({"nodes":[]})");
  BOOST_TEST(!store.find("zz").has_value());
}

BOOST_AUTO_TEST_CASE(events_are_read_after_a_cursor_and_metric_events_become_metric_rows) {
  cdui::test::temp_home home;
  run_store store{home.path() / "cdui.db"};
  store.insert(make_run("a1"));
  store.append_event("a1", event(1, "execution_start", "{}"));
  store.append_event("a1", event(2, "metric", R"({"node":"train","name":"loss","step":1,"value":0.9})"));
  store.append_event("a1", event(3, "metric", R"({"node":"train","name":"acc","step":1,"value":0.4})"));
  store.append_event("a1", event(4, "metric", R"({"node":"train","name":"loss","step":2,"value":0.7})"));
  BOOST_TEST(store.last_cursor("a1") == 4u);
  BOOST_TEST(store.last_cursor("other") == 0u);
  auto after = store.events_after("a1", 1, 2);
  BOOST_REQUIRE(after.size() == 2u);
  BOOST_TEST(after[0].cursor == 2u);
  BOOST_TEST(after[1].type == "metric");
  auto loss = store.metrics("a1", "loss");
  BOOST_REQUIRE(loss.size() == 2u);
  BOOST_TEST(loss[0].node == "train");
  BOOST_TEST(loss[0].value == 0.9);
  BOOST_TEST(loss[1].step == 2);
  BOOST_TEST(store.metrics("a1", "").size() == 3u);
}

BOOST_AUTO_TEST_CASE(a_runs_newest_event_of_a_type_is_found) {
  cdui::test::temp_home home;
  run_store store{home.path() / "cdui.db"};
  store.insert(make_run("a1"));
  store.insert(make_run("b2"));
  store.append_event("a1", event(1, "progress", R"({"epoch":1})"));
  store.append_event("a1", event(2, "progress", R"({"epoch":2})"));
  store.append_event("a1", event(3, "metric", R"({"node":"train","name":"loss","step":2,"value":0.7})"));
  store.append_event("b2", event(1, "progress", R"({"epoch":9})"));
  auto last = store.last_event("a1", "progress");
  BOOST_REQUIRE(last.has_value());
  BOOST_TEST(last->cursor == 2u);
  BOOST_TEST(last->data == R"({"epoch":2})");
  BOOST_TEST(!store.last_event("a1", "execution_complete").has_value());
  BOOST_TEST(!store.last_event("nope", "progress").has_value());
}

BOOST_AUTO_TEST_CASE(a_duplicate_cursor_is_refused_and_leaves_no_metric_behind) {
  cdui::test::temp_home home;
  run_store store{home.path() / "cdui.db"};
  store.insert(make_run("a1"));
  store.append_event("a1", event(1, "execution_start", "{}"));
  BOOST_CHECK_THROW(store.append_event("a1", event(1, "metric", R"({"name":"loss","value":1})")),
                    std::runtime_error);
  BOOST_TEST(store.metrics("a1", "").empty());
}

BOOST_AUTO_TEST_CASE(the_list_is_newest_first_filtered_paged_and_counts_the_total) {
  cdui::test::temp_home home;
  run_store store{home.path() / "cdui.db"};
  for (auto id : {"r1", "r2", "r3", "r4", "r5"})
    store.insert(make_run(id, std::string{id} == "r2" ? run_status::failed : run_status::queued));
  auto page = store.list(std::nullopt, 2, 1);
  BOOST_TEST(page.total == 5u);
  BOOST_REQUIRE(page.runs.size() == 2u);
  BOOST_TEST(page.runs[0].id == "r4");
  BOOST_TEST(page.runs[1].id == "r3");
  auto failed = store.list(run_status::failed, 0, 0);
  BOOST_TEST(failed.total == 1u);
  BOOST_TEST(failed.runs.at(0).id == "r2");
  auto counts = store.count_by_status();
  BOOST_TEST(counts[run_status::queued] == 4u);
  BOOST_TEST(counts[run_status::failed] == 1u);
}

BOOST_AUTO_TEST_CASE(the_list_filters_by_worker_and_device_through_the_queue_key) {
  cdui::test::temp_home home;
  run_store store{home.path() / "cdui.db"};
  auto put = [&](const char* id, const char* key) {
    auto r = make_run(id);
    r.info.queue_key = key;
    store.insert(r);
  };
  put("a", "sim:0");
  put("b", "w1/sim:0");
  put("c", "w1/cpu");
  put("d", "w1_x/sim:0");  // '_' is no wildcard: not w1's
  put("e", "any");
  put("f", "cpu");
  auto ids = [&](cdui::storage::run_filter f) {
    std::vector<std::string> out;
    for (const auto& r : store.list(f, 0, 0).runs)
      out.push_back(r.id);
    return out;
  };
  using v = std::vector<std::string>;
  BOOST_TEST(ids({std::nullopt, "w1", ""}) == (v{"c", "b"}), boost::test_tools::per_element());
  BOOST_TEST(ids({std::nullopt, "local", ""}) == (v{"f", "a"}), boost::test_tools::per_element());
  BOOST_TEST(ids({std::nullopt, "", "sim:0"}) == (v{"d", "b", "a"}), boost::test_tools::per_element());
  BOOST_TEST(ids({std::nullopt, "w1", "sim:0"}) == (v{"b"}), boost::test_tools::per_element());
  BOOST_TEST(ids({run_status::queued, "local", "cpu"}) == (v{"f"}), boost::test_tools::per_element());
  BOOST_TEST(ids({run_status::failed, "w1", ""}).empty());
  BOOST_TEST(store.list(cdui::storage::run_filter{std::nullopt, "w1", ""}, 1, 0).total == 2u);
}

BOOST_AUTO_TEST_CASE(unfinished_runs_come_back_in_submit_order) {
  cdui::test::temp_home home;
  run_store store{home.path() / "cdui.db"};
  store.insert(make_run("z9"));
  store.insert(make_run("a1", run_status::succeeded));
  store.insert(make_run("m5", run_status::running));
  store.insert(make_run("b2"));
  auto open = store.unfinished();
  BOOST_REQUIRE(open.size() == 3u);
  BOOST_TEST(open[0].info.id == "z9");
  BOOST_TEST(open[1].info.id == "m5");
  BOOST_TEST(open[2].info.id == "b2");
}

// After a restart the server finds how many events of a worker run came from its worker: those
// after the cursor recorded with its start (the run's warnings while it queued came before).
BOOST_AUTO_TEST_CASE(a_worker_runs_start_keeps_the_cursor_its_workers_events_follow) {
  cdui::test::temp_home home;
  auto file = home.path() / "cdui.db";
  {
    run_store store{file};
    store.insert(make_run("w1"));
    store.insert(make_run("w2"));
    store.append_event("w1", event(1, "run_warning", R"({"kind":"memory_budget"})"));
    auto info = store.find("w1")->info;
    info.status = run_status::running;
    info.started_ms = 3000;
    store.record_worker_start(info, 1);
    BOOST_TEST(store.worker_cursor_base("w2") == 0u);  // never started on a worker
  }
  {
    run_store store{file};
    auto w1 = store.find("w1");
    BOOST_TEST(w1->info.status == run_status::running);  // with its start, in one transaction
    BOOST_TEST(w1->info.started_ms == 3000);
    BOOST_TEST(store.worker_cursor_base("w1") == 1u);
    BOOST_TEST(store.erase("w1"));
    BOOST_TEST(store.worker_cursor_base("w1") == 0u);
  }
  // A store from before worker_starts gets the table when it opens, and knows no start.
  sqlite3* db = nullptr;
  BOOST_REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
  BOOST_REQUIRE(sqlite3_exec(db, "DROP TABLE worker_starts", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  run_store store{file};
  BOOST_TEST(store.worker_cursor_base("w2") == 0u);
  auto info = store.find("w2")->info;
  info.status = run_status::running;
  store.record_worker_start(info, 0);
  BOOST_TEST(store.find("w2")->info.status == run_status::running);
}

BOOST_AUTO_TEST_CASE(erase_deletes_the_run_its_events_metrics_and_artifacts) {
  cdui::test::temp_home home;
  run_store store{home.path() / "cdui.db"};
  store.insert(make_run("a1"));
  store.append_event("a1", event(1, "metric", R"({"node":"t","name":"loss","step":1,"value":1})"));
  store.add_artifact("a1", {"checkpoints/last.pt", 1234});
  BOOST_TEST(store.artifacts("a1").at(0).bytes == 1234u);
  BOOST_TEST(store.erase("a1"));
  BOOST_TEST(!store.erase("a1"));
  BOOST_TEST(!store.find("a1").has_value());
  BOOST_TEST(store.events_after("a1", 0, 10).empty());
  BOOST_TEST(store.metrics("a1", "").empty());
  BOOST_TEST(store.artifacts("a1").empty());
}

BOOST_AUTO_TEST_CASE(a_commit_is_on_disk_when_the_writer_is_killed) {
  cdui::test::temp_home home;
  auto file = home.path() / "cdui.db";
  { run_store create{file}; }
  auto child = ::fork();
  if (child == 0) {
    run_store store{file};
    store.insert(make_run("k1"));
    store.append_event("k1", event(1, "execution_start", "{}"));
    ::_exit(0);  // no destructor: the connection is never closed
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  run_store store{file};
  BOOST_TEST(store.find("k1").has_value());
  BOOST_TEST(store.last_cursor("k1") == 1u);
}

BOOST_AUTO_TEST_CASE(a_writer_that_never_pauses_keeps_the_wal_bounded) {
  cdui::test::temp_home home;
  auto file = home.path() / "cdui.db";
  run_store store{file};
  store.checkpoint_in_background(1'000'000, 64);  // the thread is never asked: inline only
  for (int i = 0; i < 500; ++i)
    store.insert(make_run("w" + std::to_string(i)));
  // Without checkpoints, 500 inserts leave 1,500 frames or more (6 MiB); the WAL starts again
  // after each inline checkpoint, so it never holds much more than 64 frames of 4,120 bytes.
  BOOST_TEST(std::filesystem::file_size(home.path() / "cdui.db-wal") <= 80u * 4120u);  // 330 KB
  BOOST_TEST(store.background_checkpoints() >= 1u);
  BOOST_TEST(store.list(std::nullopt, 0, 0).total == 500u);
}

BOOST_AUTO_TEST_CASE(a_new_store_and_its_wal_are_only_the_owner_s) {
  cdui::test::temp_home home;
  auto file = home.path() / "cdui.db";
  ::umask(022);  // what a shell usually has
  run_store store{file};
  store.insert(make_run("a1"));
  BOOST_TEST(mode_of(file) == 0600u);
  BOOST_TEST(mode_of(home.path() / "cdui.db-wal") == 0600u);
  BOOST_TEST(mode_of(home.path() / "cdui.db-shm") == 0600u);
}

BOOST_AUTO_TEST_CASE(an_existing_store_readable_by_others_is_narrowed) {
  cdui::test::temp_home home;
  auto file = home.path() / "cdui.db";
  fill(file, 1);
  ::chmod(file.c_str(), 0644);
  run_store store{file};
  BOOST_TEST(mode_of(file) == 0600u);
  BOOST_TEST(store.find("r0").has_value());
}

// Issue 10: a ModelSaver wrote a checkpoint over cdui.db.
BOOST_AUTO_TEST_CASE(a_store_overwritten_with_other_bytes_is_damaged) {
  cdui::test::temp_home home;
  auto file = home.path() / "cdui.db";
  fill(file, 3);
  std::ofstream{file, std::ios::binary | std::ios::trunc} << "PK\x03\x04 a torch archive, not a database";
  expect_damaged(file);
  expect_damaged(file, run_store::check::tables);
  // Nothing was written into it.
  std::ifstream in{file, std::ios::binary};
  std::string first;
  std::getline(in, first);
  BOOST_TEST(first.rfind("PK", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(a_store_with_a_damaged_page_is_found_by_the_whole_check) {
  cdui::test::temp_home home;
  auto file = home.path() / "cdui.db";
  fill(file, 200);
  auto size = std::filesystem::file_size(file);
  BOOST_TEST_REQUIRE(size > 20 * 4096u);
  {
    std::fstream f{file, std::ios::binary | std::ios::in | std::ios::out};
    f.seekp(4096 * 2);  // page 3: past the header and the schema
    f << std::string(4096 * 4, '\x5a');
  }
  expect_damaged(file);
}

BOOST_AUTO_TEST_CASE(another_program_s_database_is_not_a_cdui_store) {
  cdui::test::temp_home home;
  auto file = home.path() / "cdui.db";
  sqlite3* db = nullptr;
  BOOST_TEST_REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
  BOOST_TEST_REQUIRE(sqlite3_exec(db, "CREATE TABLE runs (id TEXT, who TEXT)", nullptr, nullptr,
                                  nullptr) == SQLITE_OK);
  sqlite3_close(db);
  expect_damaged(file);
}

BOOST_AUTO_TEST_CASE(a_store_that_cannot_be_opened_is_not_called_damaged) {
  cdui::test::temp_home home;
  try {
    run_store store{home.path() / "no-such-folder" / "cdui.db"};
    BOOST_FAIL("the store opened");
  } catch (const damaged_store& e) {
    BOOST_FAIL(std::string{"called damaged: "} + e.what());
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string{e.what()}.find("cannot open the run store") == 0u, e.what());
  }
}

BOOST_AUTO_TEST_CASE(a_sweep_and_its_runs_are_written_together_and_read_back_in_order) {
  cdui::test::temp_home home;
  run_store store{home.path() / "cdui.db"};
  auto sweep = make_record("w1", "lr sweep", R"({"method":"grid"})");
  std::vector<stored_run> runs{make_run("c"), make_run("a"), make_run("b")};
  store.insert_sweep(sweep, runs, {R"({"opt.lr":0.1})", R"({"opt.lr":0.2})", R"({"opt.lr":0.3})"});
  auto children = store.sweep_children("w1");
  BOOST_REQUIRE_EQUAL(children.size(), 3u);
  BOOST_TEST(children[0].run.id == "c");
  BOOST_TEST(children[1].index == 1u);
  BOOST_TEST(children[2].params == R"({"opt.lr":0.3})");
  BOOST_TEST(store.find("a").has_value());
  BOOST_TEST(store.find_sweep("w1")->name == "lr sweep");
  BOOST_TEST(store.sweeps(true).size() == 1u);
  sweep.state = "finished";
  sweep.cancel_asked = true;
  sweep.finished_ms = 9;
  store.update_sweep(sweep);
  auto again = store.find_sweep("w1");
  BOOST_TEST(again->state == "finished");
  BOOST_TEST(again->cancel_asked);
  BOOST_TEST(again->finished_ms == 9);
  BOOST_TEST(store.sweeps(true).empty());
  BOOST_TEST(store.sweeps().size() == 1u);
  // A run id taken already, with nothing to draw another: nothing of the second sweep is written.
  sweep.id = "w2";
  std::vector<stored_run> taken{make_run("d"), make_run("a")};
  BOOST_CHECK_THROW(store.insert_sweep(sweep, taken, {"{}", "{}"}), std::exception);
  BOOST_TEST(!store.find_sweep("w2"));
  BOOST_TEST(!store.find("d"));
  BOOST_TEST(store.sweep_children("w2").empty());
  // With new ids to draw, the taken one is recorded under the next free one, and linked by it.
  std::vector<std::string> draws{"b", "e"};  // "b" is taken too
  store.insert_sweep(sweep, taken, {"{}", "{}"}, [&] {
    auto id = draws.front();
    draws.erase(draws.begin());
    return id;
  });
  BOOST_TEST(taken[0].info.id == "d");
  BOOST_TEST(taken[1].info.id == "e");
  auto w2 = store.sweep_children("w2");
  BOOST_REQUIRE_EQUAL(w2.size(), 2u);
  BOOST_TEST(w2[1].run.id == "e");
}

BOOST_AUTO_TEST_CASE(runs_inserted_together_are_recorded_in_their_order_all_or_none) {
  cdui::test::temp_home home;
  run_store store{home.path() / "cdui.db"};
  std::vector<stored_run> runs{make_run("c"), make_run("a"), make_run("b")};
  store.insert(runs);
  auto open = store.unfinished();  // in submit order
  BOOST_REQUIRE_EQUAL(open.size(), 3u);
  BOOST_TEST(open[0].info.id == "c");
  BOOST_TEST(open[1].info.id == "a");
  BOOST_TEST(open[2].info.id == "b");
  // A run id taken already, with nothing to draw another: none of them is written.
  std::vector<stored_run> taken{make_run("d"), make_run("a")};
  BOOST_CHECK_THROW(store.insert(taken), std::exception);
  BOOST_TEST(!store.find("d"));
  BOOST_TEST(store.unfinished().size() == 3u);
  // With a new id to draw, the taken one is recorded under it; the stored "a" is left as it was.
  store.insert(taken, [] { return std::string{"f"}; });
  BOOST_TEST(taken[1].info.id == "f");
  BOOST_TEST(store.find("f").has_value());
  BOOST_TEST(store.unfinished().size() == 5u);
}

BOOST_AUTO_TEST_CASE(a_trial_is_written_with_its_run_and_a_trial_run_again_is_linked_to_its_new_run) {
  cdui::test::temp_home home;
  run_store store{home.path() / "cdui.db"};
  cdui::study_record study = make_record("s1", "lr study", R"({"budget":{"trials":3}})");
  auto t0 = make_run("t0");
  auto t1 = make_run("t1");
  store.insert_trial(&study, "s1", 0, t0, R"({"opt.lr":0.1})");
  store.insert_trial(nullptr, "s1", 1, t1, R"({"opt.lr":0.2})");
  BOOST_TEST(store.find_study("s1")->name == "lr study");
  BOOST_TEST(store.studies(true).size() == 1u);
  BOOST_TEST(store.sweeps().empty());
  auto trials = store.study_trials("s1");
  BOOST_REQUIRE_EQUAL(trials.size(), 2u);
  BOOST_TEST(trials[0].run.id == "t0");
  BOOST_TEST(trials[1].index == 1u);
  BOOST_TEST(trials[1].params == R"({"opt.lr":0.2})");
  // Trial 1 run again after a restart interrupted it: the same number, the new run.
  auto t1b = make_run("t1b");
  store.insert_trial(nullptr, "s1", 1, t1b, R"({"opt.lr":0.2})");
  trials = store.study_trials("s1");
  BOOST_REQUIRE_EQUAL(trials.size(), 2u);
  BOOST_TEST(trials[1].run.id == "t1b");
  BOOST_TEST(store.find("t1").has_value());
  // A run id taken already: neither the run nor the trial is written.
  auto again = make_run("t0");
  BOOST_CHECK_THROW(store.insert_trial(nullptr, "s1", 2, again, "{}"), std::exception);
  BOOST_TEST(store.study_trials("s1").size() == 2u);
  // A study id taken already: its first trial's run is not written either.
  auto u0 = make_run("u0");
  BOOST_CHECK_THROW(store.insert_trial(&study, "s1", 0, u0, "{}"), std::exception);
  BOOST_TEST(!store.find("u0"));
  study.state = "finished";
  study.finished_ms = 9;
  store.update_study(study);
  BOOST_TEST(store.find_study("s1")->state == "finished");
  BOOST_TEST(store.studies(true).empty());
  BOOST_TEST(store.studies().size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
