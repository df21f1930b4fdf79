#include <boost/test/unit_test.hpp>

#include <sstream>

#include "apps/runs_table.hpp"

using namespace cdui;
using namespace cdui::apps;

BOOST_AUTO_TEST_SUITE(runs_table_test)

namespace {

constexpr std::int64_t t0 = 1'796'107'300'000;

run_info run(std::string id, std::string name, run_status status, std::string key) {
  run_info r;
  r.id = std::move(id);
  r.name = std::move(name);
  r.status = status;
  r.queue_key = std::move(key);
  r.created_ms = t0;
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_failed_run_shows_the_first_line_of_its_error_and_a_queued_one_why_it_waits) {
  auto failed = run("aaaaaaaa", "f", run_status::failed, "cpu");
  failed.error = "Node TrainingLoop (loop) failed: out of memory\nsecond line";
  auto queued = run("bbbbbbbb", "q", run_status::queued, "sim:0");
  queued.waiting_reason = "waits for memory: needs 0.8 GiB";
  queued.error = "not shown";
  auto done = run("cccccccc", "d", run_status::succeeded, "cpu");
  BOOST_TEST(reason_text(failed) == "Node TrainingLoop (loop) failed: out of memory");
  BOOST_TEST(reason_text(queued) == "waits for memory: needs 0.8 GiB");
  BOOST_TEST(reason_text(done) == "");
  auto table = runs_table({failed, queued, done}, 3, false, t0);
  BOOST_TEST(table.find("failed: out of memory\n") != std::string::npos, table);
  BOOST_TEST(table.find("second line") == std::string::npos, table);
}

BOOST_AUTO_TEST_CASE(columns_stay_aligned_with_a_long_worker_device_key) {
  auto local = run("aaaaaaaa", "short", run_status::succeeded, "cpu");
  auto remote = run("bbbbbbbb", "remote", run_status::running, "a-rather-long-worker-name/cuda:12");
  remote.started_ms = t0 + 1000;
  auto lines = lines_of(runs_table({local, remote}, 2, false, t0 + 3500));
  BOOST_REQUIRE(lines.size() == 3u);
  // Every column starts at the same place on every line: QUEUE comes after the widest DEVICE.
  auto queue_at = lines[0].find("QUEUE");
  BOOST_TEST(lines[2].find("cuda:12") + std::string{"cuda:12"}.size() + 2 == queue_at, lines[2]);
  BOOST_TEST(lines[1].substr(queue_at, 1) == "-");
  BOOST_TEST(lines[0].find("SECONDS") == lines[2].find("2.5"), lines[2]);
}

BOOST_AUTO_TEST_CASE(names_and_reasons_are_cut_unless_wide) {
  auto r = run("aaaaaaaa", std::string(40, 'n'), run_status::failed, "cpu");
  r.error = std::string(150, 'e');
  auto narrow = runs_table({r}, 1, false, t0);
  BOOST_TEST(narrow.find(std::string(19, 'n') + "~") != std::string::npos, narrow);
  BOOST_TEST(narrow.find(std::string(99, 'e') + "~") != std::string::npos, narrow);
  auto wide = runs_table({r}, 1, true, t0);
  BOOST_TEST(wide.find(std::string(40, 'n')) != std::string::npos, wide);
  BOOST_TEST(wide.find(std::string(150, 'e')) != std::string::npos, wide);
  BOOST_TEST(wide.find("STARTED") != std::string::npos, wide);
  BOOST_TEST(wide.find("ENDED") != std::string::npos, wide);
}

BOOST_AUTO_TEST_CASE(more_runs_than_listed_says_so) {
  auto table = runs_table({run("aaaaaaaa", "x", run_status::queued, "cpu")}, 7, false, t0);
  BOOST_TEST(table.find("(1 of 7 runs; --limit shows more)") != std::string::npos, table);
}

BOOST_AUTO_TEST_CASE(control_bytes_from_the_network_are_not_printed) {
  auto r = run("aaaaaaaa", "evil\x1b[2Jname\xff", run_status::failed, "w\x07/cpu");
  r.error = "bad\rline";
  for (const auto& text : {runs_table({r}, 1, true, t0), run_details(r, "/h/runs/aaaaaaaa", t0)}) {
    BOOST_TEST(text.find('\x1b') == std::string::npos, text);
    BOOST_TEST(text.find('\x07') == std::string::npos, text);
    BOOST_TEST(text.find('\r') == std::string::npos, text);
  }
}

BOOST_AUTO_TEST_CASE(a_budget_shows_its_source) {
  auto r = run("aaaaaaaa", "b", run_status::queued, "sim:0");
  r.options = R"({"target":{"memory_gib":0.5,"memory_source":"measured"}})";
  BOOST_TEST(budget_text(r) == "512.0 MiB meas.");
  r.options = "{}";
  BOOST_TEST(budget_text(r) == "-");
  r.options = "not json";
  BOOST_TEST(budget_text(r) == "-");
}

BOOST_AUTO_TEST_CASE(show_gives_status_reason_place_worker_budget_times_folder_and_metrics) {
  auto r = run("aaaaaaaa", "m", run_status::queued, "gpu-box/sim:1");
  r.queue_position = 2;
  r.waiting_reason = "position 2 in the queue of gpu-box/sim:1, behind run c34c16b5 (running)";
  r.options = R"({"device":"sim","target":{"worker":"gpu-box","memory_gib":1}})";
  auto text = run_details(r, "/h/runs/aaaaaaaa", t0);
  for (auto want : {"status:   queued", "queue:    position 2 in the queue of gpu-box/sim:1",
                    "waits:    position 2", "device:   sim:1", "worker:   gpu-box",
                    "asked:    device sim, target gpu-box", "budget:   1.00 GiB",
                    "folder:   /h/runs/aaaaaaaa (made when the run starts)", "agents/gpu-box/runs/aaaaaaaa"})
    BOOST_TEST(text.find(want) != std::string::npos, want << " in\n" << text);

  auto f = run("bbbbbbbb", "m", run_status::failed, "cpu");
  f.started_ms = t0;
  f.finished_ms = t0 + 1500;
  f.error = "first\nsecond";
  f.final_metrics = R"({"loop":{"loss":0.25}})";
  text = run_details(f, "/h/runs/bbbbbbbb", t0);
  BOOST_TEST(text.find("folder:   /h/runs/bbbbbbbb\n") != std::string::npos, text);
  for (auto want : {"worker:   - (this server)", "seconds:  1.5\n", "error:\n  first\n  second\n",
                    "final metrics:\n  loop.loss = 0.2500\n"})
    BOOST_TEST(text.find(want) != std::string::npos, want << " in\n" << text);
}

BOOST_AUTO_TEST_CASE(a_run_for_any_worker_has_no_place_until_it_takes_a_slot) {
  auto r = run("aaaaaaaa", "m", run_status::queued, "any");
  auto text = run_details(r, "/h/runs/aaaaaaaa", t0);
  BOOST_TEST(text.find("device:   -\n") != std::string::npos, text);
  BOOST_TEST(text.find("worker:   - (not placed yet: waits in any)\n") != std::string::npos, text);
}

BOOST_AUTO_TEST_SUITE_END()
