// The server's three in-memory stores (docs/http-api.md, "The in-memory stores"), through the
// embedded runtime with real runs: the run output store (record_outputs), the node state store
// (weights_persistent) and the execution cache of an editor session (interactive runs).
#include <boost/test/unit_test.hpp>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "actors/server/server.hpp"
#include "testkit/embedded.hpp"
#include "testkit/env.hpp"
#include "testkit/graphs.hpp"
#include "testkit/home.hpp"

using nlohmann::json;

namespace {

using cdui::test::scoped_env;
using cdui::test::server_config;

/// A seeded run of the moons graph, with `n_samples` points (16 bytes each: two float32 inputs
/// and an int64 target).
cdui::run_request moons_run(int epochs, int max_steps = 0, int hidden = 16, int n_samples = 512) {
  cdui::test::moons_options o;
  o.epochs = epochs;
  o.max_steps = max_steps;
  o.hidden = hidden;
  o.samples = n_samples;
  cdui::run_request r;
  r.graph_json = cdui::test::moons_graph_json(o).dump();
  r.has_seed = true;
  r.seed = 3;
  return r;
}

std::string run_to_end(cdui::server& srv, const cdui::run_request& r) {
  auto submitted = srv.submit(r);
  BOOST_REQUIRE_MESSAGE(submitted.ok(), submitted.error);
  auto info = srv.wait(submitted.run_id);
  BOOST_REQUIRE_MESSAGE(info.status == cdui::run_status::succeeded, info.error);
  return submitted.run_id;
}

/// The three stores' status, by name.
std::map<std::string, cdui::cache_store_status> caches(cdui::server& srv) {
  std::map<std::string, cdui::cache_store_status> out;
  for (auto& c : srv.caches())
    out[c.name] = c;
  return out;
}

/// Each node's node_status values, in order, e.g. {"data": ["running", "completed"]}.
std::map<std::string, std::vector<std::string>> node_statuses(cdui::server& srv,
                                                             const std::string& id) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& e : srv.events(id, 0).value().events) {
    if (e.type != "node_status")
      continue;
    auto data = json::parse(e.data);
    out[data["node"].get<std::string>()].push_back(data["status"].get<std::string>());
  }
  return out;
}

double first_epoch_loss(cdui::server& srv, const std::string& id) {
  auto points = srv.metrics(id, "train_loss");
  BOOST_REQUIRE(points.has_value());
  BOOST_REQUIRE(!points->empty());
  return points->front().value;
}

json final_metrics(cdui::server& srv, const std::string& id) {
  return json::parse(srv.info(id)->final_metrics);
}

} // namespace

BOOST_AUTO_TEST_SUITE(cache_store_test)

BOOST_AUTO_TEST_CASE(record_outputs_keeps_every_nodes_outputs_and_health_counts_their_bytes) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  auto health = caches(srv);
  BOOST_TEST(health["run_output_store"].count_name == "runs");
  BOOST_TEST(health["run_output_store"].entries == 0u);
  BOOST_TEST(health["run_output_store"].max_entries == 20);
  BOOST_TEST(health["run_output_store"].bytes == 0);
  BOOST_TEST(health["run_output_store"].max_bytes == 2147483648LL);

  auto recorded = moons_run(1, 2);
  recorded.record_outputs = true;
  auto id = run_to_end(srv, recorded);
  auto plain = run_to_end(srv, moons_run(1, 2));

  auto text = srv.recorded_outputs(id);
  BOOST_REQUIRE(text.has_value());
  auto nodes = json::parse(*text);
  const auto& dataset = nodes["data"]["dataset"];
  BOOST_TEST(dataset["kind"] == "dataset");
  BOOST_TEST(dataset["samples"] == 512);
  BOOST_TEST(dataset["bytes"] == 512 * 16);
  BOOST_TEST(dataset["inputs"]["shape"] == json({512, 2}));
  // Linear(2, 16) + Linear(16, 2): 48 + 34 floats.
  BOOST_TEST(nodes["model"]["model"]["parameters"] == 82);
  BOOST_TEST(nodes["model"]["model"]["bytes"] == 82 * 4);
  BOOST_TEST(nodes["loop"]["metrics"]["kind"] == "metrics");
  BOOST_TEST(nodes["loop"]["metrics"]["values"]["total_steps"] == 2);
  BOOST_TEST(!srv.recorded_outputs(plain).has_value());

  // The loader and the model pass on the dataset and the module they were given: counted once.
  auto outputs = caches(srv)["run_output_store"];
  BOOST_TEST(outputs.entries == 1u);
  auto optimizer_bytes = nodes["loop"]["optimizer_state"]["bytes"].get<std::int64_t>();
  BOOST_TEST(optimizer_bytes > 0);
  BOOST_TEST(outputs.bytes == 512 * 16 + 82 * 4 + optimizer_bytes);

  BOOST_TEST((*srv.erase(id) == cdui::erase_result::erased));
  BOOST_TEST(caches(srv)["run_output_store"].entries == 0u);
  BOOST_TEST(!srv.recorded_outputs(id).has_value());
}

BOOST_AUTO_TEST_CASE(the_run_output_store_evicts_the_least_recently_recorded_run_by_bytes) {
  cdui::test::temp_home home;
  // 1 MB holds two runs of 30,000 samples (480,000 bytes of dataset each), not three.
  scoped_env budget{"CODEFYUI_RUN_OUTPUT_STORE_MAX_MB", "1"};
  scoped_env bad{"CODEFYUI_NODE_STATE_STORE_MAX_MB", "lots"};
  cdui::server srv{server_config(home.path())};
  auto health = caches(srv);
  BOOST_TEST(health["run_output_store"].max_bytes == 1024 * 1024);
  BOOST_TEST(health["node_state_store"].max_bytes == 1073741824LL);  // the default stays
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = moons_run(1, 1, 16, 30000);
    r.record_outputs = true;
    ids.push_back(run_to_end(srv, r));
  }
  BOOST_TEST(!srv.recorded_outputs(ids[0]).has_value());
  BOOST_TEST(srv.recorded_outputs(ids[1]).has_value());
  BOOST_TEST(srv.recorded_outputs(ids[2]).has_value());
  auto outputs = caches(srv)["run_output_store"];
  BOOST_TEST(outputs.entries == 2u);
  BOOST_TEST(outputs.bytes <= 1024 * 1024);
  BOOST_TEST(outputs.bytes > 2 * 480000);
}

BOOST_AUTO_TEST_CASE(weights_persistent_runs_start_from_the_weights_the_last_one_left) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  auto persistent = [](cdui::run_request r) {
    r.weights_persistent = true;
    return r;
  };
  auto first = run_to_end(srv, persistent(moons_run(5)));
  BOOST_TEST(final_metrics(srv, first)["model"]["weights_restored"] == false);
  auto health = caches(srv)["node_state_store"];
  BOOST_TEST(health.entries == 1u);
  BOOST_TEST(health.count_name == "modules");
  BOOST_TEST(health.bytes == 82 * 4);
  BOOST_TEST(health.max_entries == 200);

  auto resumed = run_to_end(srv, persistent(moons_run(1)));
  auto fresh = run_to_end(srv, moons_run(1));
  BOOST_TEST(final_metrics(srv, resumed)["model"]["weights_restored"] == true);
  BOOST_TEST(!final_metrics(srv, fresh)["model"].contains("weights_restored"));
  // Same seed: the fresh run repeats the first run's first epoch; the resumed one starts trained.
  BOOST_TEST(first_epoch_loss(srv, fresh) == first_epoch_loss(srv, first));
  BOOST_TEST(first_epoch_loss(srv, resumed) < 0.8 * first_epoch_loss(srv, fresh));

  // Another architecture is another module: fresh weights, and a second entry.
  auto wider = run_to_end(srv, persistent(moons_run(1, 0, 32)));
  BOOST_TEST(final_metrics(srv, wider)["model"]["weights_restored"] == false);
  BOOST_TEST(caches(srv)["node_state_store"].entries == 2u);
}

BOOST_AUTO_TEST_CASE(an_editor_sessions_execution_cache_reruns_only_what_changed) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  auto interactive = [](cdui::run_request r, const std::string& session) {
    r.lane = cdui::run_lane::interactive;
    r.session = session;
    return r;
  };
  auto first = run_to_end(srv, interactive(moons_run(1, 2), "tab-1"));
  for (const auto& [node, statuses] : node_statuses(srv, first))
    BOOST_TEST(statuses.front() == "running", node);
  auto health = caches(srv)["execution_cache"];
  BOOST_TEST(health.per_instance);
  BOOST_TEST(health.instances == 1u);
  BOOST_TEST(health.entries == 6u);  // every node
  BOOST_TEST(health.max_bytes == 1073741824LL);  // each
  BOOST_TEST(health.max_entries == 256);

  // The loop's max_steps changed: everything upstream of it comes from the cache.
  auto edited = run_to_end(srv, interactive(moons_run(1, 3), "tab-1"));
  auto statuses = node_statuses(srv, edited);
  for (const auto* node : {"data", "loader", "model", "loss", "opt"})
    BOOST_TEST(statuses[node] == std::vector<std::string>{"cached"}, node);
  BOOST_TEST(statuses["loop"].front() == "running");
  auto metrics = final_metrics(srv, edited);
  BOOST_TEST(metrics["loop"]["total_steps"] == 3);
  BOOST_TEST(metrics["model"]["parameters"] == 82);  // a cached node keeps its final metrics

  // Another editor session and a queued run share nothing with tab-1.
  auto other = run_to_end(srv, interactive(moons_run(1, 3), "tab-2"));
  BOOST_TEST(node_statuses(srv, other)["data"].front() == "running");
  auto queued = run_to_end(srv, moons_run(1, 3));
  BOOST_TEST(node_statuses(srv, queued)["data"].front() == "running");
  BOOST_TEST(caches(srv)["execution_cache"].instances == 2u);

  BOOST_TEST(srv.close_session("tab-1"));
  BOOST_TEST(!srv.close_session("tab-1"));
  BOOST_TEST(caches(srv)["execution_cache"].instances == 1u);
  auto reopened = run_to_end(srv, interactive(moons_run(1, 3), "tab-1"));
  BOOST_TEST(node_statuses(srv, reopened)["data"].front() == "running");
}

BOOST_AUTO_TEST_CASE(an_out_of_memory_error_drops_the_cached_model_so_the_next_run_starts_clean) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path(), "1x256KiB")};
  // A 2-16-2 MLP trains on the 256 KiB card; a 2-4096-2 one (80 KiB of weights, as much again
  // in gradients and twice that in Adam's state) runs out of memory in its first step.
  auto on_card = [](int hidden, int max_steps) {
    cdui::test::moons_options o;
    o.max_steps = max_steps;
    o.hidden = hidden;
    o.device = "sim:0";
    auto r = moons_run(1);
    r.graph_json = cdui::test::moons_graph_json(o).dump();
    r.lane = cdui::run_lane::interactive;
    r.session = "tab-1";
    return r;
  };
  run_to_end(srv, on_card(16, 2));
  auto before = caches(srv)["execution_cache"];
  BOOST_TEST(before.entries == 6u);

  auto big = srv.submit(on_card(4096, 2));
  BOOST_REQUIRE_MESSAGE(big.ok(), big.error);
  auto failed = srv.wait(big.run_id);
  BOOST_REQUIRE(failed.status == cdui::run_status::failed);
  BOOST_TEST(failed.error.find("ran out of memory") != std::string::npos, failed.error);
  auto statuses = node_statuses(srv, big.run_id);
  BOOST_TEST(statuses["model"] == (std::vector<std::string>{"running", "completed"}));
  // The 4096-wide model was cached when its node completed, and dropped when the loop it fed ran
  // out of memory: the session holds what it held before, not those 80 KiB and their gradients.
  auto after = caches(srv)["execution_cache"];
  BOOST_TEST(after.entries == before.entries);
  BOOST_TEST(after.bytes == before.bytes);

  // The same graph again builds its model afresh instead of taking the one the failed run left.
  auto retried = srv.submit(on_card(4096, 2));
  BOOST_REQUIRE(retried.ok());
  BOOST_REQUIRE(srv.wait(retried.run_id).status == cdui::run_status::failed);
  BOOST_TEST(node_statuses(srv, retried.run_id)["model"].front() == "running");
  BOOST_TEST(node_statuses(srv, retried.run_id)["data"] == std::vector<std::string>{"cached"});
}

BOOST_AUTO_TEST_CASE(a_session_keeps_its_seed_and_another_seed_misses_the_cache) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  auto unseeded = [](int max_steps) {
    auto r = moons_run(1, max_steps);
    r.has_seed = false;
    r.lane = cdui::run_lane::interactive;
    r.session = "tab-1";
    return r;
  };
  auto seed_of = [&](const std::string& id) {
    return json::parse(srv.events(id, 0).value().events.front().data)["seed"].get<std::uint64_t>();
  };
  auto first = run_to_end(srv, unseeded(2));
  auto second = run_to_end(srv, unseeded(3));
  BOOST_TEST(seed_of(second) == seed_of(first));  // the session's seed, drawn once
  BOOST_TEST(node_statuses(srv, second)["model"] == std::vector<std::string>{"cached"});

  auto reseeded = unseeded(3);
  reseeded.has_seed = true;
  reseeded.seed = seed_of(first) + 1;
  auto third = run_to_end(srv, reseeded);
  // Another seed means other weights and another dataset order: nothing is reused.
  BOOST_TEST(node_statuses(srv, third)["model"].front() == "running");
  BOOST_TEST(node_statuses(srv, third)["data"].front() == "running");

  BOOST_TEST(srv.close_session("tab-1"));
  auto after = run_to_end(srv, unseeded(2));
  BOOST_TEST(node_statuses(srv, after)["data"].front() == "running");
}

BOOST_AUTO_TEST_CASE(the_status_tree_lists_the_three_stores) {
  cdui::test::temp_home home;
  cdui::server srv{server_config(home.path())};
  std::vector<std::string> names;
  for (const auto& store : srv.status().stores) {
    names.push_back(store.name);
    BOOST_TEST(store.hits == 0u);
  }
  BOOST_TEST(names == (std::vector<std::string>{"execution_cache", "run_output_store",
                                                "node_state_store"}));
}

BOOST_AUTO_TEST_SUITE_END()
