// Sweeps through a real server: POST /api/sweeps, its refusals, GET, results.csv, cancel, children
// on two agents with target any, and a kill -9 of the server in the middle of a sweep.

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <fstream>
#include <set>
#include <sstream>

#include "integration/worker_helpers.hpp"
#include "testkit/wait.hpp"

using namespace cdui::test;

namespace {

/// A sweep body over opt.lr and loader.batch_size of `graph`, with `options`.
json sweep_body(const json& graph, const json& options = json::object()) {
  return {{"graph", graph},
          {"name", "lr-batch"},
          {"spec",
           {{"method", "grid"},
            {"params",
             {{{"node", "opt"}, {"param", "lr"}, {"values", {0.05, 0.01}}},
              {{"node", "loader"}, {"param", "batch_size"}, {"values", {16, 64}}}}}}},
          {"objective", {{"metric", "final_train_loss"}, {"direction", "min"}}},
          {"options", options}};
}

httplib::Result post(const server_process& srv, const std::string& path, const json& body) {
  return srv.client().Post(path.c_str(), srv.auth(), body.dump(), "application/json");
}

/// POST /api/sweeps that must be accepted; the sweep's id.
std::string sweep_ok(const server_process& srv, const json& body) {
  auto res = post(srv, "/api/sweeps", body);
  BOOST_REQUIRE(res);
  BOOST_REQUIRE_MESSAGE(res->status == 200, res->body);
  return json::parse(res->body)["sweep_id"].get<std::string>();
}

/// Polls GET /api/sweeps/{id} until `done` says so; the sweep. Throws after `timeout`.
template <class Done>
json await_sweep(const server_process& srv, const std::string& id, Done done,
                 std::chrono::seconds timeout = std::chrono::seconds(240)) {
  json sweep;
  if (!cdui::test::eventually([&] { return done(sweep = srv.get_json("/api/sweeps/" + id)); }, timeout))
    throw std::runtime_error("sweep " + id + " did not get there in time: " + sweep.dump());
  return sweep;
}

json await_state(const server_process& srv, const std::string& id, const std::string& state) {
  return await_sweep(srv, id, [&](const json& s) { return s["state"] == state; });
}

/// The sweep's variants in variant order.
std::vector<json> by_index(const json& sweep) {
  std::vector<json> out(sweep["variants"].size());
  for (const auto& v : sweep["variants"])
    out.at(v["index"].get<std::size_t>()) = v;
  return out;
}

/// A moons graph that trains until it is stopped, on no device of its own.
json endless() {
  return moons_graph_json(1'000'000, 0, 16, std::nullopt);
}

} // namespace

BOOST_AUTO_TEST_SUITE(sweep_test)

BOOST_AUTO_TEST_CASE(a_grid_sweep_runs_every_variant_in_order_and_ranks_them) {
  temp_home home;
  server_process srv{home};
  auto res = post(srv, "/api/sweeps", sweep_body(moons_graph_json(2), {{"seed", 1}}));
  BOOST_REQUIRE_MESSAGE(res->status == 200, res->body);
  auto submitted = json::parse(res->body);
  BOOST_TEST(submitted["runs"] == 4);
  auto id = submitted["sweep_id"].get<std::string>();
  auto sweep = await_state(srv, id, "finished");
  BOOST_TEST(sweep["counts"]["succeeded"] == 4);
  // Grid order: the last param turns fastest.
  auto v = by_index(sweep);
  BOOST_TEST(v[0]["params"] == (json{{"opt.lr", 0.05}, {"loader.batch_size", 16}}));
  BOOST_TEST(v[1]["params"] == (json{{"opt.lr", 0.05}, {"loader.batch_size", 64}}));
  BOOST_TEST(v[2]["params"] == (json{{"opt.lr", 0.01}, {"loader.batch_size", 16}}));
  BOOST_TEST(v[3]["params"] == (json{{"opt.lr", 0.01}, {"loader.batch_size", 64}}));
  BOOST_TEST(v[0]["run_id"] == submitted["run_ids"][0]);
  // Ranked by the final training loss, smallest first; the best is the first.
  const auto& ranked = sweep["variants"];
  for (std::size_t i = 1; i < ranked.size(); ++i)
    BOOST_TEST(ranked[i - 1]["objective"].get<double>() <= ranked[i]["objective"].get<double>());
  BOOST_TEST(ranked[0]["rank"] == 1);
  BOOST_TEST(sweep["best"] == ranked[0]);
  BOOST_TEST(ranked[0]["queue_key"] == "cpu");
  BOOST_TEST(ranked[0]["worker_id"].is_null());
  // Each child is an ordinary run with its graph's params set.
  auto run = srv.get_json("/api/runs/" + v[1]["run_id"].get<std::string>());
  BOOST_TEST(run["status"] == "succeeded");
  BOOST_TEST(run["options"]["seed"] == 1);
  auto graph = json::parse(file_text(home.path() / "runs" / v[1]["run_id"].get<std::string>() / "graph.json"));
  for (const auto& node : graph["nodes"]) {
    if (node["id"] == "opt")
      BOOST_TEST(node["params"]["lr"] == 0.05);
    if (node["id"] == "loader")
      BOOST_TEST(node["params"]["batch_size"] == 64);
  }
  BOOST_TEST(srv.get_json("/api/runs")["total"] == 4);
  auto listed = srv.get_json("/api/sweeps")["sweeps"];
  BOOST_REQUIRE_EQUAL(listed.size(), 1u);
  BOOST_TEST(listed[0]["state"] == "finished");
  auto csv = srv.client().Get(("/api/sweeps/" + id + "/results.csv").c_str());
  BOOST_TEST(csv->status == 200);
  std::istringstream lines{csv->body};
  std::string header, first;
  std::getline(lines, header);
  std::getline(lines, first);
  BOOST_TEST(header == "rank,index,run_id,status,loader.batch_size,opt.lr,final_train_loss,worker_id,queue_key");
  BOOST_TEST(first.rfind("1,", 0) == 0u, first);
  BOOST_TEST(std::count(csv->body.begin(), csv->body.end(), '\n') == 5);
  BOOST_TEST(srv.client().Get("/api/sweeps/nope")->status == 404);
}

BOOST_AUTO_TEST_CASE(a_sweep_with_one_refused_child_is_refused_whole_and_queues_nothing) {
  temp_home home;
  server_process srv{home, {{"CODEFYUI_MAX_SWEEP_RUNS", "3"}}};
  auto refusal = [&](const json& body) {
    auto res = post(srv, "/api/sweeps", body);
    BOOST_TEST(res->status == 400, res->body);
    return json::parse(res->body)["detail"].get<std::string>();
  };
  auto body = [](const json& params, const json& options = json::object()) {
    return json{{"graph", moons_graph_json(1)},
                {"spec", {{"method", "grid"}, {"params", params}}},
                {"objective", {{"metric", "loss"}, {"direction", "min"}}},
                {"options", options}};
  };
  auto lr = json{{"node", "opt"}, {"param", "lr"}, {"values", {0.1, 0.01}}};
  BOOST_TEST(refusal(body({{{"node", "optimizer"}, {"param", "lr"}, {"values", {0.1}}}}))
             == "spec.params[0].node: the graph has no node 'optimizer' (its nodes: data, loader, model, loss, opt, loop)");
  auto unknown_param = refusal(body({{{"node", "opt"}, {"param", "learning_rate"}, {"values", {0.1}}}}));
  BOOST_TEST(unknown_param.rfind("variant 0 {\"opt.learning_rate\":0.1}: ", 0) == 0u, unknown_param);
  BOOST_TEST(unknown_param.find("learning_rate") != std::string::npos, unknown_param);
  // One value of two is refused: the whole sweep is.
  auto bad_value = refusal(body({{{"node", "loader"}, {"param", "batch_size"}, {"values", {16, -4}}}}));
  BOOST_TEST(bad_value.rfind("variant 1 {\"loader.batch_size\":-4}: ", 0) == 0u, bad_value);
  BOOST_TEST(bad_value.find("nothing was queued") != std::string::npos, bad_value);
  auto target = refusal(body(json::array({lr}), {{"target", {{"worker", "nobody"}}}}));
  BOOST_TEST(target.find("nobody") != std::string::npos, target);
  BOOST_TEST(refusal(body({lr, {{"node", "loader"}, {"param", "batch_size"}, {"values", {16, 32}}}}))
             == "the sweep has 4 variants, more than the 3 a sweep may have (CODEFYUI_MAX_SWEEP_RUNS); "
                "nothing was queued: narrow the spec or raise the limit");
  // A shared card, and a graph with no measured peak and no declared budget.
  BOOST_TEST(srv.client().Put("/api/devices/sim:0/sharing", srv.auth(), R"({"mode": "shared"})",
                              "application/json")->status == 200);
  auto unbudgeted = refusal(body(json::array({lr}), {{"device", "sim:0"}}));
  BOOST_TEST(unbudgeted.find("memory_gib") != std::string::npos, unbudgeted);
  BOOST_TEST(refusal(body({{{"node", "opt"}, {"param", "lr"}, {"min", 0.1}, {"max", 1}}}))
             == "spec.params[0].count: a grid needs count for a range (how many points from min to max)");
  BOOST_TEST(srv.get_json("/api/runs")["total"] == 0);
  BOOST_TEST(srv.get_json("/api/sweeps")["sweeps"].empty());
  BOOST_TEST(std::filesystem::is_empty(home.path() / "runs"));
}

namespace {

/// A sweep of two variants (opt.lr 0.1, 0.01) of a one-epoch moons graph on sim:0 with `target`.
json budgeted_sweep(const json& target) {
  return {{"graph", moons_graph_json(1)},
          {"spec", {{"method", "grid"}, {"params", {{{"node", "opt"}, {"param", "lr"}, {"values", {0.1, 0.01}}}}}}},
          {"objective", {{"metric", "loss"}, {"direction", "min"}}},
          {"options", {{"device", "sim:0"}, {"target", target}}}};
}

/// The sweep is refused with 400 and nothing was queued: no run, no sweep, no run folder.
std::string refused_whole(const server_process& srv, const temp_home& home, const json& body) {
  auto res = post(srv, "/api/sweeps", body);
  BOOST_REQUIRE(res);
  BOOST_TEST(res->status == 400, res->body);
  BOOST_TEST(srv.get_json("/api/runs")["total"] == 0);
  BOOST_TEST(srv.get_json("/api/sweeps")["sweeps"].empty());
  BOOST_TEST(std::filesystem::is_empty(home.path() / "runs"));
  return json::parse(res->body)["detail"].get<std::string>();
}

/// sim:0 (1 GiB) shared by memory.
void share_sim0(const server_process& srv) {
  BOOST_REQUIRE(srv.client().Put("/api/devices/sim:0/sharing", srv.auth(), R"({"mode": "shared"})",
                                 "application/json")->status == 200);
}

} // namespace

BOOST_AUTO_TEST_CASE(a_variant_whose_budget_no_card_holds_refuses_the_sweep_whole) {
  temp_home home;
  server_process srv{home};
  share_sim0(srv);
  // Whatever target.wait says: no ending run makes room for it.
  BOOST_TEST(refused_whole(srv, home, budgeted_sweep({{"memory_gib", 2}, {"wait", true}}))
             == "variant 0 {\"opt.lr\":0.1}: needs 2.0 GiB, more than sim:0 on this server has in all "
                "(1.0 GiB); nothing was queued");
}

BOOST_AUTO_TEST_CASE(a_variant_that_does_not_fit_now_beside_the_ones_before_it_without_wait_refuses_the_sweep_whole) {
  temp_home home;
  server_process srv{home};
  share_sim0(srv);
  // 0.6 GiB each on a 1 GiB card: the first fits, the second does not beside it.
  auto refusal = refused_whole(srv, home, budgeted_sweep({{"memory_gib", 0.6}, {"wait", false}}));
  BOOST_TEST(refusal == "variant 1 {\"opt.lr\":0.01}: needs 0.6 GiB, sim:0 on this server has 0.4 GiB free "
                        "(runs variant 0) (with target.wait true it would wait in the queue until it "
                        "fits); nothing was queued");
  // With wait true the second waits for the first: the sweep is queued.
  auto id = sweep_ok(srv, budgeted_sweep({{"memory_gib", 0.6}, {"wait", true}}));
  auto done = await_state(srv, id, "finished");
  BOOST_TEST(done["counts"]["succeeded"] == 2, done.dump());
}

BOOST_AUTO_TEST_CASE(a_cancel_stops_the_running_children_and_cancels_the_queued_ones) {
  temp_home home;
  server_process srv{home};
  // The CPU takes two runs at once: two variants run, two wait.
  auto id = sweep_ok(srv, sweep_body(moons_graph_json(1'000'000), {{"seed", 1}}));
  await_sweep(srv, id, [](const json& s) { return s["counts"]["running"] == 2; });
  auto sweep = srv.get_json("/api/sweeps/" + id);
  BOOST_TEST(sweep["state"] == "running");
  BOOST_TEST(sweep["counts"]["queued"] == 2);
  auto res = post(srv, "/api/sweeps/" + id + "/cancel", json::object());
  BOOST_TEST(res->status == 200);
  BOOST_TEST(json::parse(res->body)["cancelled"] == true);
  sweep = await_state(srv, id, "cancelled");
  BOOST_TEST(sweep["counts"]["cancelled"] == 4, sweep.dump());
  BOOST_TEST(sweep["best"].is_null());
  for (const auto& v : sweep["variants"])
    BOOST_TEST(v["rank"].is_null());
  // Cancelled once; again it has nothing to stop.
  BOOST_TEST(json::parse(post(srv, "/api/sweeps/" + id + "/cancel", json::object())->body)["cancelled"] == false);
  BOOST_TEST(post(srv, "/api/sweeps/nope/cancel", json::object())->status == 404);
}

BOOST_AUTO_TEST_CASE(a_server_with_an_active_sweep_stops_and_its_queued_children_wait_for_the_next_start) {
  temp_home home;
  std::string id;
  {
    server_process srv{home};
    // Two variants run on the CPU, two wait; the sweep's actor waits for all four.
    id = sweep_ok(srv, sweep_body(moons_graph_json(1'000'000), {{"seed", 1}}));
    await_sweep(srv, id, [](const json& s) { return s["counts"]["running"] == 2; });
    // The stop ended in the actor system's teardown, waiting for good on the queued children's
    // actors (the sweep's waits kept them alive).
    srv.proc().signal(SIGTERM);
    auto code = srv.proc().wait_for(std::chrono::seconds(60));
    BOOST_REQUIRE_MESSAGE(code.has_value(), "the server did not stop within 60 s of its SIGTERM");
    BOOST_TEST(*code == 0, srv.proc().err());
  }
  server_process srv{home};
  auto sweep = srv.get_json("/api/sweeps/" + id);
  BOOST_TEST(sweep["counts"]["interrupted"] == 2, sweep.dump());
  // The two that waited were left queued, not failed: this server runs them.
  await_sweep(srv, id, [](const json& s) { return s["counts"]["running"] == 2; });
  BOOST_TEST(json::parse(post(srv, "/api/sweeps/" + id + "/cancel", json::object())->body)["cancelled"] == true);
  await_sweep(srv, id, [](const json& s) { return s["counts"]["cancelled"] == 2; });
}

BOOST_AUTO_TEST_CASE(children_for_any_worker_run_two_at_a_time_on_two_agents_with_one_card_each) {
  temp_home home;
  run_process_guard guard{home};
  // This server offers no accelerator: only the agents' cards take the children.
  server_process srv{home, {{"CODEFYUI_WORKER_HEARTBEAT_S", "0.5"}, {"CODEFYUI_SIM_DEVICES", ""}}};
  auto a = start_agent(home, "w1", "1x1GiB");
  auto b = start_agent(home, "w2", "1x1GiB");
  await_worker(srv, "w1", "online");
  await_worker(srv, "w2", "online");
  auto id = sweep_ok(srv, sweep_body(endless(), {{"seed", 1}, {"target", {{"worker", "any"}}}}));
  auto sweep = await_sweep(srv, id, [](const json& s) { return s["counts"]["running"] == 2; });
  std::set<std::string> workers;
  for (const auto& v : sweep["variants"]) {
    if (v["status"] == "running") {
      workers.insert(v["worker_id"].get<std::string>());
      BOOST_TEST(v["devices"] == json::array({"sim:0"}));
    } else {
      BOOST_TEST(v["status"] == "queued");
      BOOST_TEST(v["queue_key"] == "any");
    }
  }
  BOOST_TEST(workers == (std::set<std::string>{"w1", "w2"}));
  BOOST_TEST(sweep["counts"]["queued"] == 2);
  // When a running child ends, a waiting one takes its card.
  auto first = std::find_if(sweep["variants"].begin(), sweep["variants"].end(),
                            [](const json& v) { return v["status"] == "running"; });
  srv.cancel((*first)["run_id"].get<std::string>());
  sweep = await_sweep(srv, id, [](const json& s) {
    return s["counts"]["cancelled"] == 1 && s["counts"]["running"] == 2;
  });
  BOOST_TEST(sweep["counts"]["queued"] == 1);
  post(srv, "/api/sweeps/" + id + "/cancel", json::object());
  sweep = await_state(srv, id, "cancelled");
  BOOST_TEST(sweep["counts"]["cancelled"] == 4, sweep.dump());
}

BOOST_AUTO_TEST_CASE(after_kill_9_of_the_server_the_sweep_goes_on_and_its_ranking_is_complete) {
  temp_home home;
  run_process_guard guard{home};
  auto agent = start_agent(home, "w1", "2x1GiB");
  std::string id;
  // Only the agent's two cards take the runs, so they are adopted at the restart.
  std::map<std::string, std::string> env{{"CODEFYUI_WORKER_HEARTBEAT_S", "0.5"}, {"CODEFYUI_SIM_DEVICES", ""}};
  {
    server_process srv{home, env};
    await_worker(srv, "w1", "online");
    moons_options o;
    o.epochs = 1'000'000;
    o.max_steps = 600;
    o.device = std::nullopt;
    id = sweep_ok(srv, sweep_body(moons_graph_json(o), {{"seed", 1}, {"target", {{"worker", "any"}}}}));
    await_sweep(srv, id, [](const json& s) { return s["counts"]["running"] == 2; });
    srv.proc().signal(SIGKILL);
    srv.proc().wait_for(std::chrono::seconds(10));
  }
  server_process srv{home, env};
  auto sweep = await_state(srv, id, "finished");
  BOOST_TEST(sweep["counts"]["succeeded"] == 4, sweep.dump());
  for (const auto& v : sweep["variants"]) {
    BOOST_TEST(!v["rank"].is_null(), v.dump());
    BOOST_TEST(v["worker_id"] == "w1");
  }
  BOOST_TEST(!sweep["best"].is_null());
  BOOST_TEST(srv.get_json("/api/runs")["total"] == 4);
}

BOOST_AUTO_TEST_CASE(cdui_sweep_prints_a_ranked_table_and_exits_0_when_the_sweep_finished) {
  temp_home home;
  server_process srv{home};
  auto graph = write_graph(home, "moons", moons_graph_json(1));
  auto spec_file = home.path() / "spec.json";
  auto body = sweep_body(json::object());
  body.erase("graph");
  std::ofstream{spec_file} << body.dump();
  auto done = run_cdui(home, {"sweep", graph, spec_file.string()});
  BOOST_TEST(done.code == 0, done.out + done.err);
  BOOST_TEST(done.out.find("4 runs queued") != std::string::npos, done.out);
  BOOST_TEST(done.out.find("finished, 4 succeeded") != std::string::npos, done.out);
  BOOST_TEST(done.out.find("RANK  RUN") != std::string::npos, done.out);
  auto refused = run_cdui(home, {"sweep", graph, graph});  // a graph is no sweep
  BOOST_TEST(refused.code == 2, refused.out + refused.err);
  BOOST_TEST(refused.err.find("the server refused the sweep: field 'edges' is not known") != std::string::npos,
             refused.err);
}

BOOST_AUTO_TEST_SUITE_END()
