// A full disk under a real server (issue 33, failure 3): the home on a small tmpfs that a filler
// file fills to its last byte while runs and a sweep are submitted. Each submit is accepted or gets
// a 503 that says the disk is full; an accepted run that cannot be recorded ends failed saying so,
// and no run holds a slot once it has ended (a ghost held the CPU slot until a restart). Once there
// is room again, what the store could not take is recorded and the next run trains.
#include <boost/test/unit_test.hpp>

#include "testkit/graphs.hpp"
#include "testkit/server_process.hpp"
#include "testkit/small_disk.hpp"
#include "testkit/wait.hpp"

using namespace std::chrono_literals;
using namespace cdui::test;
using nlohmann::json;

namespace {

/// Whether no run holds a slot or waits for one (GET /api/queues).
bool queues_idle(const json& queues) {
  for (const auto& q : queues["queues"])
    if (!q["running"].empty() || q["queue_length"] != 0)
      return false;
  return queues["floating_length"] == 0 && queues["interactive"]["running"].empty();
}

/// The answer to a refused submit: 503, and its detail says the disk is full.
void check_disk_full_refusal(const httplib::Result& res) {
  BOOST_TEST(res->status == 503, res->status << " " << res->body);
  BOOST_TEST(res->body.find("the disk is full") != std::string::npos, res->body);
}

} // namespace

BOOST_AUTO_TEST_SUITE(disk_full_test)

BOOST_AUTO_TEST_CASE(a_full_disk_fails_runs_saying_so_and_leaves_no_slot_held) {
  temp_home home;
  small_disk disk{home.path(), 8 << 20};
  if (!disk.mounted()) {
    BOOST_WARN_MESSAGE(false, "skipped: " + disk.why_not());
    return;
  }
  server_process srv{home, {{"CODEFYUI_RUN_QUEUE_MAX_CONCURRENT", "cpu=1"}}};
  json run{{"graph", moons_graph_json(1)}, {"options", {{"device", "cpu"}}}};
  BOOST_TEST(srv.wait_final(srv.submit_ok(run), 120s)["status"] == "succeeded");

  // Runs recorded while there was room wait behind one that holds the CPU slot, a sweep's too.
  auto holder = srv.submit_ok(endless_run("cpu"));
  srv.await_status(holder, "running");
  std::vector<std::string> waiting;
  for (int i = 0; i < 4; ++i)
    waiting.push_back(srv.submit_ok(run));
  json sweep{{"graph", moons_graph_json(1)},
             {"spec", {{"method", "grid"}, {"params", {{{"node", "opt"}, {"param", "lr"}, {"values", {0.05, 0.01}}}}}}},
             {"objective", {{"metric", "final_train_loss"}, {"direction", "min"}}},
             {"options", {{"device", "cpu"}}}};
  auto swept = srv.client().Post("/api/sweeps", srv.auth(), sweep.dump(), "application/json");
  BOOST_REQUIRE(swept);
  BOOST_REQUIRE_MESSAGE(swept->status == 200, swept->body);
  auto sweep_runs = json::parse(swept->body)["run_ids"];
  for (const auto& id : sweep_runs)
    waiting.push_back(id.get<std::string>());

  // The disk fills up: a submit is refused saying so, and the waiting runs start on it.
  BOOST_TEST_MESSAGE("filled " << disk.fill() << " bytes");
  auto refused = srv.submit(run);
  BOOST_REQUIRE(refused);
  if (refused->status == 200)
    waiting.push_back(json::parse(refused->body)["run_id"].get<std::string>());
  else
    check_disk_full_refusal(refused);
  srv.cancel(holder);

  // Every run ends while the disk is still full, and frees what it held.
  json queues;
  BOOST_TEST(eventually([&] { return queues_idle(queues = srv.get_json("/api/queues")); }, 120s),
             queues.dump());

  disk.make_room();
  for (const auto& id : waiting) {
    json got;
    // Recorded at the latest a second after the store has room again (the run's actor tries it).
    BOOST_TEST(eventually([&] { return (got = srv.get_json("/api/runs/" + id))["active"] == false; }, 30s),
               got.dump());
    BOOST_TEST(got["status"] == "failed", got.dump());
    BOOST_TEST((got["error"].is_string() && got["error"].get<std::string>().find("the disk is full") != std::string::npos),
               got.dump());
  }
  BOOST_TEST(eventually([&] { return srv.get_json("/api/runs/" + holder)["active"] == false; }, 30s));
  // The CPU slot is free: the next run trains.
  BOOST_TEST(srv.wait_final(srv.submit_ok(run), 120s)["status"] == "succeeded");
}

BOOST_AUTO_TEST_SUITE_END()
