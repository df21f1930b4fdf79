// Studies through a real server: a study with ASHA against the grid over the same space on the
// moons example, a pruned trial's status and reason, and a kill -9 of the server mid-study.

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <set>

#include "integration/worker_helpers.hpp"
#include "testkit/wait.hpp"

using namespace cdui::test;

namespace {

/// The moons example, validated after each epoch. 27 epochs give ASHA rungs at 1, 3, 9 and 27: with
/// 9 (three rungs) the study's first trials, which nothing can prune yet, spend most of its half.
json validated_moons(int epochs) {
  moons_options o;
  o.epochs = epochs;
  o.max_steps = std::nullopt;
  o.evaluate = true;
  auto g = moons_graph_json(o);
  g["edges"].push_back({{"from", "test_loader.dataloader"}, {"to", "loop.val_dataloader"}});
  return g;
}

json space() {
  return json::array({{{"node", "opt"}, {"param", "lr"}, {"min", 0.0003}, {"max", 0.3}, {"scale", "log"}, {"count", 6}}});
}

json objective() {
  return {{"metric", "val_accuracy"}, {"direction", "max"}};
}

httplib::Result post(const server_process& srv, const std::string& path, const json& body) {
  return srv.client().Post(path.c_str(), srv.auth(), body.dump(), "application/json");
}

std::string accepted(const server_process& srv, const std::string& path, const json& body, const char* id_field) {
  auto res = post(srv, path, body);
  BOOST_REQUIRE(res);
  BOOST_REQUIRE_MESSAGE(res->status == 200, res->body);
  return json::parse(res->body)[id_field].get<std::string>();
}

/// Polls `path` until its state is final; the answer.
json await_final(const server_process& srv, const std::string& path,
                 std::chrono::seconds timeout = std::chrono::seconds(300)) {
  json j;
  auto ended = [&] {
    auto state = (j = srv.get_json(path)).value("state", std::string{});
    return state == "finished" || state == "failed" || state == "cancelled";
  };
  if (!eventually(ended, timeout))
    throw std::runtime_error(path + " did not end in time: " + j.dump());
  return j;
}

json study_body(int epochs, int trials, int parallel, const json& pruner) {
  return {{"graph", validated_moons(epochs)}, {"name", "moons-lr"}, {"space", space()},
          {"objective", objective()}, {"budget", {{"trials", trials}, {"max_parallel", parallel}}},
          {"sampler", "random"}, {"pruner", pruner}, {"seed", 1}, {"options", {{"seed", 1}}}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(study_test)

BOOST_AUTO_TEST_CASE(asha_reaches_the_grids_best_with_half_its_epochs_and_prunes_with_a_reason) {
  temp_home home;
  server_process srv{home};
  constexpr int epochs = 27;
  auto grid_id = accepted(srv, "/api/sweeps",
                          {{"graph", validated_moons(epochs)}, {"spec", {{"method", "grid"}, {"params", space()}}},
                           {"objective", {{"metric", "final_val_accuracy"}, {"direction", "max"}}},
                           {"options", {{"seed", 1}}}},
                          "sweep_id");
  auto grid = await_final(srv, "/api/sweeps/" + grid_id);
  BOOST_REQUIRE(grid["state"] == "finished");
  double grid_best = grid["best"]["objective"].get<double>();
  int grid_epochs = epochs * static_cast<int>(grid["variants"].size());

  // One trial at a time: with two in flight, which reaches a rung first is up to the machine's load,
  // and with it what async ASHA promotes (32 to 80 of the 81 epochs allowed, over 40 loaded runs).
  // One at a time it is 34, and the epochs a pruned trial runs before its stop arrives. The kill -9
  // case below runs two at a time.
  auto id = accepted(srv, "/api/studies", study_body(epochs, 6, 1, "asha"), "study_id");
  auto study = await_final(srv, "/api/studies/" + id);
  BOOST_TEST_MESSAGE("grid: best " << grid_best << " in " << grid_epochs << " epochs; study: best "
                                   << study["best"].dump() << " in " << study["epochs"] << " epochs");
  BOOST_REQUIRE_MESSAGE(study["state"] == "finished", study.dump());
  BOOST_TEST(study["trials"].size() == 6u);
  BOOST_TEST(study["best"]["value"].get<double>() >= grid_best - 0.01, study.dump());
  BOOST_TEST(study["epochs"].get<int>() * 2 <= grid_epochs, study.dump());
  bool pruned = false;
  for (const auto& t : study["trials"]) {
    BOOST_TEST(!t["intermediate_values"].empty(), t.dump());
    if (t["status"] == "pruned") {
      pruned = true;
      BOOST_TEST(t["error"].get<std::string>().rfind("pruned at epoch ", 0) == 0, t.dump());
      auto run = srv.get_json("/api/runs/" + t["run_id"].get<std::string>());
      BOOST_TEST(run["status"] == "pruned");
      BOOST_TEST(run["error"] == t["error"]);
    }
  }
  BOOST_TEST(pruned, study.dump());
  BOOST_TEST(srv.get_json("/api/studies")["studies"].size() == 1u);

  auto res = post(srv, "/api/studies", study_body(epochs, 0, 1, "asha"));
  BOOST_REQUIRE(res);
  BOOST_TEST(res->status == 400);
  BOOST_TEST(json::parse(res->body)["detail"] == "budget.trials: must be a whole number from 1 to 1000000000");
  auto unknown = study_body(epochs, 2, 1, "none");
  unknown["space"][0]["node"] = "nope";
  res = post(srv, "/api/studies", unknown);
  BOOST_REQUIRE(res);
  BOOST_TEST(res->status == 400);
  BOOST_TEST(json::parse(res->body)["detail"].get<std::string>().rfind("space[0].node: the graph has no node", 0) == 0,
             res->body);
  BOOST_TEST(srv.get_json("/api/studies")["studies"].size() == 1u);
}

BOOST_AUTO_TEST_CASE(after_kill_9_of_the_server_the_study_goes_on_without_losing_or_repeating_a_trial) {
  temp_home home;
  std::string id, interrupted_run;
  {
    server_process srv{home};
    id = accepted(srv, "/api/studies", study_body(40, 3, 2, "none"), "study_id");
    // Two at a time from the start: trial 1 is proposed before trial 0 has ended.
    json s;
    auto proposed = [&] { return (s = srv.get_json("/api/studies/" + id))["trials"].size() >= 2u; };
    BOOST_REQUIRE_MESSAGE(eventually(proposed, std::chrono::seconds(120)), "trial 1 was not proposed in time");
    BOOST_TEST(s["trials"][0]["status"] != "succeeded", "trial 1 was proposed once trial 0 had ended: " << s.dump());
    // Trial 1 running, with an epoch behind it.
    auto trial_1_reported = [&] {
      s = srv.get_json("/api/studies/" + id);
      const auto& t = s["trials"][1];
      if (t["status"] != "running" || t["intermediate_values"].empty())
        return false;
      interrupted_run = t["run_id"];
      return true;
    };
    BOOST_REQUIRE_MESSAGE(eventually(trial_1_reported, std::chrono::seconds(120)),
                          "trial 1 did not report an epoch in time");
    srv.proc().signal(SIGKILL);
    srv.proc().wait_for(std::chrono::seconds(10));
  }
  server_process srv{home};
  auto study = await_final(srv, "/api/studies/" + id);
  BOOST_TEST(study["state"] == "finished", study.dump());
  std::set<int> numbers;
  for (const auto& t : study["trials"]) {
    numbers.insert(t["number"].get<int>());
    BOOST_TEST(t["status"] == "succeeded", t.dump());
  }
  BOOST_TEST(numbers == (std::set<int>{0, 1, 2}));
  BOOST_TEST(study["trials"][1]["run_id"] != interrupted_run);
  BOOST_TEST(srv.get_json("/api/runs/" + interrupted_run)["status"] == "interrupted");
}

BOOST_AUTO_TEST_SUITE_END()
