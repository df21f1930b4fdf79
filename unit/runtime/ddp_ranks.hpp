#pragma once
// DDP ranks as an agent starts them (docs/ddp.md), for the tests of unit/runtime: the graph, the run
// folder, `cdui exec` ranks, and what they leave (outcome, metric series, weights).

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "testkit/graphs.hpp"
#include "testkit/home.hpp"
#include "testkit/server_process.hpp"
#include "unit/runtime/saved_weights.hpp"

namespace cdui::test::ddp {

using nlohmann::json;

/// The moons MLP with SGD and momentum, no dropout, 20 optimizer steps, validated after each
/// epoch, train_loss_batch after every batch, its weights saved to the
/// run's checkpoints/model.pt. `batch` per process; the loop's strategy as given.
inline json ddp_graph(int batch, int accumulate, const std::string& strategy, bool shuffle) {
  auto g = training_graph_json(
    {{"name", "moons"}, {"n_samples", 512}, {"noise", 0.1}},
    {{"batch_size", batch}, {"shuffle", shuffle}},
    {{{"type", "Linear"}, {"out_features", 16}}, {{"type", "ReLU"}}, {{"type", "Linear"}, {"out_features", 2}}},
    {{"name", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}},
    {{"epochs", 5}, {"max_steps", 20}, {"accumulate_steps", accumulate}, {"strategy", strategy},
     {"train_loss_batch_every", 1}});
  // Validation on the training set, in order: each process scores its part.
  g["edges"].push_back({{"from", "loader.dataloader"}, {"to", "loop.val_dataloader"}});
  g["nodes"].push_back({{"id", "save"}, {"type", "ModelSaver"}, {"params", {{"path", "model.pt"}}}});
  g["edges"].push_back({{"from", "loop.model"}, {"to", "save.model"}});
  return g;
}

/// A run folder as an agent prepares it (graph.json, run.json) for a run on `cards`.
inline std::filesystem::path prepare(const temp_home& home, const std::string& id, const json& graph,
                              const std::vector<std::string>& cards) {
  auto dir = home.path() / "runs" / id;
  std::filesystem::create_directories(dir);
  std::ofstream{dir / "graph.json"} << graph.dump();
  std::ofstream{dir / "run.json"} << json{{"run_id", id},
                                          {"device", cards.front()},
                                          {"visible_devices", cards},
                                          {"seed", 7},
                                          {"num_threads", 1},
                                          {"options", json::object()}}
                                       .dump();
  return dir;
}

inline json outcome(const std::filesystem::path& file) {
  std::ifstream in{file};
  return json::parse(in, nullptr, false);
}

/// The metric `name` the run in `dir` reported (its events.jsonl), as step -> value.
inline std::map<std::int64_t, double> series(const std::filesystem::path& dir, const std::string& name) {
  std::map<std::int64_t, double> values;
  std::ifstream in{dir / "events.jsonl"};
  for (std::string line; std::getline(in, line);) {
    auto e = json::parse(line, nullptr, false);
    if (e.is_object() && e["type"] == "metric" && e["data"]["name"] == name)
      values[e["data"]["step"].get<std::int64_t>()] = e["data"]["value"].get<double>();
  }
  return values;
}

/// The same series within `atol`, step by step.
inline void check_same_series(const std::filesystem::path& a, const std::filesystem::path& b, const std::string& name,
                       std::size_t points) {
  auto x = series(a, name);
  auto y = series(b, name);
  BOOST_TEST_REQUIRE(x.size() == points, name << ": " << x.size() << " points");
  BOOST_TEST_REQUIRE(y.size() == points, name << ": " << y.size() << " points");
  for (const auto& [step, value] : y)
    BOOST_TEST(std::abs(x.at(step) - value) < 1e-5, name << " at step " << step << ": " << x.at(step) << " vs " << value);
}

/// Starts rank `k` of `world` of the run in `dir` (`cdui exec --rank k --world-size world`) on two
/// 1 GiB sim cards, with the run's secret `secret` when not empty.
inline std::unique_ptr<process> start_rank(const std::filesystem::path& dir, int k, int world,
                                           const std::string& timeout_s = "60", const std::string& secret = "") {
  std::map<std::string, std::string> env{{"CODEFYUI_SIM_DEVICES", "2x1GiB"}, {"OMP_NUM_THREADS", "1"},
                                         {"CODEFYUI_DDP_TIMEOUT_S", timeout_s}};
  if (!secret.empty())
    env["CDUI_DDP_SECRET"] = secret;
  return start_cdui({"exec", dir.string(), "--rank", std::to_string(k), "--world-size", std::to_string(world)}, env);
}

/// Waits for each of `ranks` to end, exit code 0.
inline void wait_ranks(const std::vector<std::unique_ptr<process>>& ranks) {
  for (const auto& r : ranks) {
    auto code = r->wait_for(std::chrono::minutes(3));
    BOOST_TEST_REQUIRE(code.has_value(), "a rank did not end");
    BOOST_TEST(*code == 0, r->err());
  }
}

/// Runs ranks 0..`started`-1 of `world` of the run in `dir` to their end.
inline void run_ranks(const std::filesystem::path& dir, int world, int started = -1,
                      const std::string& timeout_s = "60") {
  std::vector<std::unique_ptr<process>> ranks;
  for (int k = 0; k < (started < 0 ? world : started); ++k)
    ranks.push_back(start_rank(dir, k, world, timeout_s));
  wait_ranks(ranks);
}

/// The model.pt each run saved holds the same weights, within 1e-5.
inline void check_same_saved_weights(const std::filesystem::path& a, const std::filesystem::path& b) {
  check_close_weights(a / "checkpoints" / "model.pt", b / "checkpoints" / "model.pt");
}

} // namespace cdui::test::ddp
