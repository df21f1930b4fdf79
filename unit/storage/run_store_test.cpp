#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include "storage/run_store.hpp"
#include "unit/test_home.hpp"

using cdui::run_status;
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

BOOST_AUTO_TEST_SUITE_END()
