#pragma once

// What the runtime tests share: run a graph through the real validator and engine, record every
// event, and read the metrics back.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "messages/run_outcome.hpp"
#include "runtime/engine.hpp"
#include "runtime/validate.hpp"
#include "testkit/env.hpp"
#include "testkit/graphs.hpp"

namespace cdui::test {

struct recorded_event {
  std::string type;
  nlohmann::json data;
};

/// A finished run: its outcome, every event in order, and the final metrics parsed.
struct recorded_run {
  run_outcome outcome;
  std::vector<recorded_event> events;
  nlohmann::json metrics;

  [[nodiscard]] std::vector<nlohmann::json> of_type(const std::string& type) const {
    std::vector<nlohmann::json> found;
    for (const auto& e : events)
      if (e.type == type)
        found.push_back(e.data);
    return found;
  }

  /// The values of metric `name` that node `node` emitted, in order.
  [[nodiscard]] std::vector<double> series(const std::string& node, const std::string& name) const {
    std::vector<double> values;
    for (const auto& m : of_type("metric"))
      if (m.value("node", "") == node && m.value("name", "") == name)
        values.push_back(m["value"].get<double>());
    return values;
  }

  /// The steps of metric `name` that node `node` emitted, in order.
  [[nodiscard]] std::vector<std::int64_t> steps(const std::string& node,
                                                const std::string& name) const {
    std::vector<std::int64_t> values;
    for (const auto& m : of_type("metric"))
      if (m.value("node", "") == node && m.value("name", "") == name)
        values.push_back(m["step"].get<std::int64_t>());
    return values;
  }

  /// The node_config event of node `node` (null when it sent none).
  [[nodiscard]] nlohmann::json config(const std::string& node) const {
    for (const auto& c : of_type("node_config"))
      if (c.value("node", "") == node)
        return c;
    return nullptr;
  }

  [[nodiscard]] bool succeeded() const { return outcome.status == run_status::succeeded; }
};

/// Validates a graph document and fails the test (printing every error) when it does not validate.
inline runtime::validated_graph require_valid(const nlohmann::json& doc) {
  auto result = runtime::validate_graph(doc);
  if (auto* errors = std::get_if<std::vector<runtime::graph_error>>(&result))
    BOOST_FAIL("the graph did not validate:\n" + runtime::to_string(*errors));
  return std::get<runtime::validated_graph>(std::move(result));
}

struct run_options {
  /// CODEFYUI_DATA_ROOTS while the run executes: the tests' CSV files and checkpoints of earlier
  /// runs lie in temporary folders (runtime/file_access.hpp reads only under data roots).
  std::string data_roots = std::filesystem::temp_directory_path().string();
  std::uint64_t seed = 1;
  int num_threads = 1;
  /// The run's device, what the machine offers, and a worker run's card aliases (run_context's).
  std::string device;
  devices::host_devices host;
  std::map<std::string, std::string> device_aliases;
  /// Sees every event as it is emitted; may raise the run's stop flag.
  std::function<void(const recorded_event&, std::atomic<bool>& stop)> on_event;
  /// run_context::resume_from: the checkpoint (or run folder) the run continues from.
  std::filesystem::path resume_from;
  /// Where every node's outputs go once the run ends (run_context::record_outputs); null: nowhere.
  std::shared_ptr<runtime::run_stores> recorder;
};

/// The default options with other data roots ("": none at all).
inline run_options with_data_roots(std::string roots) {
  run_options options;
  options.data_roots = std::move(roots);
  return options;
}

/// Validates and executes `doc` with `run_dir` as the run's folder, recording every event.
inline recorded_run run_graph(const nlohmann::json& doc, const std::filesystem::path& run_dir,
                              run_options options = {}) {
  auto graph = require_valid(doc);
  scoped_env roots{"CODEFYUI_DATA_ROOTS", options.data_roots};
  auto stop = std::make_shared<std::atomic<bool>>(false);
  recorded_run run;
  runtime::run_context ctx;
  ctx.run_id = "test-run";
  ctx.run_dir = run_dir;
  ctx.seed = options.seed;
  ctx.num_threads = options.num_threads;
  ctx.device = options.device;
  ctx.host = options.host;
  ctx.device_aliases = options.device_aliases;
  ctx.stop = stop;
  ctx.resume_from = options.resume_from;
  ctx.stores = options.recorder;
  ctx.record_outputs = options.recorder != nullptr;
  ctx.emit = [&](const std::string& type, const nlohmann::json& data) {
    run.events.push_back({type, data});
    if (options.on_event)
      options.on_event(run.events.back(), *stop);
  };
  run.outcome = runtime::execute(graph, ctx);
  run.metrics = nlohmann::json::parse(run.outcome.final_metrics);
  return run;
}

/// Fails the test with the run's error when it did not succeed.
inline void require_succeeded(const recorded_run& run) {
  if (!run.succeeded())
    BOOST_FAIL("the run did not succeed: " + run.outcome.error);
}

/// The params of node `id` in a graph document, to change before running it.
inline nlohmann::json& params(nlohmann::json& doc, const std::string& id) {
  for (auto& n : doc["nodes"])
    if (n["id"] == id) {
      if (!n.contains("params"))
        n["params"] = nlohmann::json::object();
      return n["params"];
    }
  BOOST_FAIL("the graph has no node " + id);
  throw; // unreachable: BOOST_FAIL throws
}

inline void add_node(nlohmann::json& doc, const std::string& id, const std::string& type,
                     nlohmann::json node_params = nlohmann::json::object()) {
  doc["nodes"].push_back({{"id", id}, {"type", type}, {"params", std::move(node_params)}});
}

inline void add_edge(nlohmann::json& doc, const std::string& from, const std::string& to) {
  doc["edges"].push_back({{"from", from}, {"to", to}});
}

/// A small moons classifier: train and test splits of 256 samples, an MLP 2-32-2, adam at 0.01,
/// three epochs with a progress event every batch, and an EvaluateModel on the test split.
/// Node ids: data, test_data, loader, test_loader, model, loss, opt, loop, eval.
inline nlohmann::json moons_graph() {
  return moons_graph_json(evaluated_moons());
}

/// Moons (256 samples, noise 0.2, batches of 32, shuffled) into an MLP with dropout, Linear1 (2 -> 32),
/// ReLU2, Dropout3 (0.3), Linear4 (32 -> 2), Adam at 0.01, with the loop's params given: 8 batches an
/// epoch, and randomness in every part of training, for the tests of resuming bit for bit.
inline nlohmann::json dropout_moons_graph(const nlohmann::json& loop) {
  return training_graph_json(
    {{"name", "moons"}, {"n_samples", 256}, {"noise", 0.2}}, {{"batch_size", 32}, {"shuffle", true}},
    {{{"type", "Linear"}, {"out_features", 32}}, {{"type", "ReLU"}}, {{"type", "Dropout"}, {"p", 0.3}},
     {{"type", "Linear"}, {"out_features", 2}}},
    {{"name", "adam"}, {"lr", 0.01}}, loop);
}

/// Options that stop the run when its `batch`-th progress event comes (a loop with
/// progress_interval_ms 0 emits one per batch).
inline run_options stop_at_batch(int batch) {
  run_options options;
  options.on_event = [seen = std::make_shared<int>(0), batch](const recorded_event& e, std::atomic<bool>& stop) {
    if (e.type == "progress" && ++*seen == batch)
      stop = true;
  };
  return options;
}

} // namespace cdui::test
