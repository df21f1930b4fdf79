// The static estimate against the measured peak: for every example graph and a table of generated
// graphs (testkit's sized_graph: MLPs and CNNs of several widths, batches 8 to 512, fp32 and bf16,
// accumulate_steps 1 and 4, five optimizers), the estimate without the CUDA-only terms, the peak the
// counting allocator measures for the same run on the CPU (one intra-op thread, a few optimizer
// steps: the peak is reached by the second), and their ratio (goal: within [0.9, 1.1]).
// Usage: bench_estimate [examples folder, default: the source tree's examples/; or one graph file:
//        that graph alone]
//        bench_estimate --generated N [--first SEED]: N graphs drawn by testkit/drawn_graphs.hpp
//        (seeds SEED.., default 1) instead: every combination of layers, precision, optimizer,
//        accumulation, freeze, LoRA and checkpointing; it reports min, median and max of the
//        ratios and the five furthest from 1, and fails on a graph that does not train. --show
//        prints each drawn graph's JSON before its row.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "devices/memory.hpp"
#include "runtime/engine.hpp"
#include "runtime/estimate.hpp"
#include "testkit/drawn_graphs.hpp"
#include "testkit/graphs.hpp"

using nlohmann::json;
using namespace cdui;

namespace {

struct row {
  std::string name;
  std::string rough;  // the estimate's reason when it gave no figure
  std::int64_t estimate = 0;
  std::int64_t peak = 0;
  double seconds = 0;
  std::string from;  // which pass decided the activations
};

/// The TrainingLoop's peak_memory_bytes on the CPU, or -1 with the error printed.
std::int64_t measured_peak(const runtime::validated_graph& g, const std::string& loop) {
  auto dir = std::filesystem::temp_directory_path() / "cdui-bench-estimate";
  std::filesystem::create_directories(dir);
  runtime::run_context ctx;
  ctx.run_id = "estimate";
  ctx.run_dir = dir;
  ctx.num_threads = 1;
  ctx.emit = [](const std::string&, const json&) {};
  auto outcome = runtime::execute(g, ctx);
  std::filesystem::remove_all(dir);
  if (outcome.status != run_status::succeeded) {
    std::fprintf(stderr, "run failed: %s\n", outcome.error.c_str());
    return -1;
  }
  return json::parse(outcome.final_metrics)[loop]["peak_memory_bytes"]["cpu"].get<std::int64_t>();
}

/// The id of the graph's TrainingLoop.
std::string loop_of(const runtime::validated_graph& g) {
  for (const auto& n : g.g.nodes)
    if (n.type == "TrainingLoop")
      return n.id;
  return "";
}

row measure(const std::string& name, const json& doc) {
  auto start = std::chrono::steady_clock::now();
  auto checked = runtime::validate_graph(doc);
  if (auto* errors = std::get_if<std::vector<runtime::graph_error>>(&checked)) {
    std::fprintf(stderr, "%s does not validate: %s\n", name.c_str(), runtime::to_string(*errors).c_str());
    return row{name, "", 0, -1, 0, "invalid"};
  }
  const auto& g = std::get<runtime::validated_graph>(checked);
  auto e = runtime::estimate_memory(g);
  row r{name, e.rough, e.total_without_cuda(), measured_peak(g, e.is_rough() ? loop_of(g) : e.loop_node), 0,
        e.is_rough() ? "rough" : e.activations_from == "training step" ? "train" : "eval"};
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

/// An example with its loop cut to a few steps on the CPU with one thread (the same peak).
json shortened(const std::filesystem::path& file) {
  std::ifstream in{file};
  auto doc = json::parse(in);
  for (auto& n : doc["nodes"])
    if (n["type"] == "TrainingLoop") {
      n["params"]["max_steps"] = 3;
      n["params"]["device"] = "cpu";
      n["params"]["num_threads"] = 1;
    }
  return doc;
}

std::vector<std::pair<std::string, test::sized_graph>> generated() {
  std::vector<std::pair<std::string, test::sized_graph>> table;
  auto add = [&](test::sized_graph g) {
    char name[128];
    std::snprintf(name, sizeof name, "%s w%d b%d %s acc%d %s%s%s%s%s%s", g.cnn ? "CNN" : "MLP",
                  g.width, g.batch, g.precision.c_str(), g.accumulate, g.optimizer.c_str(),
                  g.momentum > 0 ? "+mom" : "", g.dropout ? " dropout" : "", g.batch_norm ? " bn" : "",
                  g.layer_norm ? " ln" : "", g.activation == "ReLU" ? "" : (" " + g.activation).c_str());
    table.emplace_back(name, g);
  };
  using sg = test::sized_graph;
  auto mlp = [](int width, int batch) { sg g; g.width = width; g.batch = batch; return g; };
  // Validation in batches of 32, so the training step decides most CNN rows; two rows validate at 256.
  auto cnn = [](int width, int batch) { sg g; g.cnn = true; g.width = width; g.batch = batch; g.val_batch = 32; return g; };
  auto with = [](sg g, auto&& change) { change(g); return g; };
  add(with(mlp(64, 8), [](sg& g) { g.optimizer = "sgd"; }));
  add(with(mlp(256, 32), [](sg& g) { g.optimizer = "sgd"; g.momentum = 0.9; }));
  add(with(mlp(512, 64), [](sg& g) { g.optimizer = "adam"; }));
  add(with(mlp(1024, 128), [](sg& g) { g.optimizer = "adamw"; }));
  add(with(mlp(1024, 512), [](sg& g) { g.optimizer = "rmsprop"; }));
  add(with(mlp(2048, 256), [](sg& g) { g.optimizer = "rmsprop"; g.momentum = 0.9; }));
  add(with(mlp(512, 128), [](sg& g) { g.precision = "bf16"; g.optimizer = "adamw"; }));
  add(with(mlp(2048, 64), [](sg& g) { g.precision = "bf16"; g.optimizer = "sgd"; }));
  add(with(mlp(1024, 512), [](sg& g) { g.precision = "bf16"; g.optimizer = "adam"; }));
  add(with(mlp(512, 32), [](sg& g) { g.accumulate = 4; g.optimizer = "sgd"; g.momentum = 0.9; }));
  add(with(mlp(1024, 128), [](sg& g) { g.accumulate = 4; g.precision = "bf16"; g.optimizer = "adamw"; }));
  add(with(mlp(256, 256), [](sg& g) { g.dropout = true; g.batch_norm = true; }));
  add(with(mlp(512, 256), [](sg& g) { g.activation = "GELU"; g.layer_norm = true; g.optimizer = "sgd"; }));
  add(with(mlp(1024, 64), [](sg& g) { g.activation = "Tanh"; g.precision = "bf16"; g.optimizer = "rmsprop"; }));
  add(with(cnn(8, 8), [](sg& g) { g.optimizer = "sgd"; }));
  add(with(cnn(16, 32), [](sg& g) { g.optimizer = "adam"; g.val_batch = 256; }));
  add(with(cnn(16, 128), [](sg& g) { g.optimizer = "adamw"; }));
  add(with(cnn(32, 64), [](sg& g) { g.optimizer = "sgd"; g.momentum = 0.9; }));
  add(with(cnn(32, 256), [](sg& g) { g.optimizer = "rmsprop"; }));
  add(with(cnn(64, 512), [](sg& g) { g.optimizer = "adam"; g.samples = 1536; }));
  add(with(cnn(16, 64), [](sg& g) { g.accumulate = 4; g.optimizer = "adamw"; }));
  add(with(cnn(32, 128), [](sg& g) { g.precision = "bf16"; g.optimizer = "adam"; }));
  add(with(cnn(16, 256), [](sg& g) { g.precision = "bf16"; g.accumulate = 4; g.optimizer = "sgd"; }));
  add(with(cnn(8, 16), [](sg& g) { g.precision = "bf16"; g.optimizer = "adamw"; g.val_batch = 256; }));
  add(with(cnn(16, 64), [](sg& g) { g.dropout = true; g.batch_norm = true; g.optimizer = "rmsprop"; g.momentum = 0.9; }));
  return table;
}

/// The ratios' summary: min, median, max, and the five rows furthest from 1 (by |log ratio|).
void summarize(std::vector<row> rows) {
  std::vector<row> counted;
  int rough = 0;
  for (const auto& r : rows)
    if (r.rough.empty() && r.peak > 0)
      counted.push_back(r);
    else if (!r.rough.empty())
      ++rough;
  if (counted.empty())
    return;
  auto ratio = [](const row& r) { return static_cast<double>(r.estimate) / static_cast<double>(r.peak); };
  std::sort(counted.begin(), counted.end(), [&](const row& a, const row& b) { return ratio(a) < ratio(b); });
  std::printf("\nratios of %zu estimated graphs: min %.3f, median %.3f, max %.3f; %d rough\n", counted.size(),
              ratio(counted.front()), ratio(counted[counted.size() / 2]), ratio(counted.back()), rough);
  // The unit test's rule (unit/runtime/drawn_graphs_test.cpp): within 10%, or 64 KiB of scratch.
  auto held = std::count_if(counted.begin(), counted.end(), [&](const row& r) {
    return (ratio(r) >= 0.9 && ratio(r) <= 1.1) || std::abs(r.estimate - r.peak) <= (64 << 10);
  });
  std::printf("%ld of %zu within [0.9, 1.1] or 64 KiB of the peak\n", static_cast<long>(held), counted.size());
  std::sort(counted.begin(), counted.end(), [&](const row& a, const row& b) {
    return std::abs(std::log(ratio(a))) > std::abs(std::log(ratio(b)));
  });
  std::printf("the five furthest from 1:\n");
  for (std::size_t i = 0; i < std::min<std::size_t>(5, counted.size()); ++i)
    std::printf("  %.3f  %s\n", ratio(counted[i]), counted[i].name.c_str());
}

} // namespace

int main(int argc, char** argv) {
  std::filesystem::path examples = CDUI_SOURCE_DIR "/examples";
  int generated_count = 0;
  std::uint64_t first_seed = 1;
  bool show = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--show")
      show = true;
    else if ((arg == "--generated" || arg == "--first") && i + 1 < argc)
      (arg == "--generated" ? generated_count = std::stoi(argv[++i]) : first_seed = std::stoull(argv[++i]));
    else
      examples = arg;
  }
  std::vector<row> rows;
  int failed = 0;
  auto print = [&](const row& r) {
    rows.push_back(r);
    if (r.peak < 0) {
      ++failed;
      std::printf("| %-46s | did not train (above) |\n", r.name.c_str());
      std::fflush(stdout);
      return false;
    }
    if (!r.rough.empty()) {
      std::printf("| %-46s | rough | %12s | %10s | %12lld | %10s |       | rough: %s |\n", r.name.c_str(), "", "",
                  static_cast<long long>(r.peak), devices::format_bytes(r.peak).c_str(), r.rough.c_str());
      std::fflush(stdout);
      return true;
    }
    auto ratio = r.peak > 0 ? static_cast<double>(r.estimate) / static_cast<double>(r.peak) : 0.0;
    std::printf("| %-46s | %-5s | %12lld | %10s | %12lld | %10s | %5.3f | %s |\n", r.name.c_str(), r.from.c_str(),
                static_cast<long long>(r.estimate), devices::format_bytes(r.estimate).c_str(),
                static_cast<long long>(r.peak), devices::format_bytes(r.peak).c_str(), ratio,
                ratio >= 0.9 && ratio <= 1.1 ? "yes" : "NO");
    std::fflush(stdout);
    return ratio >= 0.9 && ratio <= 1.1;
  };
  std::printf("| %-46s | %-5s | %12s | %10s | %12s | %10s | %5s | %s |\n", "graph", "pass", "estimate (B)", "",
              "peak (B)", "", "ratio", "in band");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(48, '-').c_str(), std::string(7, '-').c_str(), std::string(14, '-').c_str(),
              std::string(12, '-').c_str(), std::string(14, '-').c_str(), std::string(12, '-').c_str(),
              std::string(7, '-').c_str(), std::string(9, '-').c_str());
  int in_band = 0, total = 0;
  auto start = std::chrono::steady_clock::now();
  if (generated_count > 0) {
    for (auto seed = first_seed; seed < first_seed + static_cast<std::uint64_t>(generated_count); ++seed) {
      auto d = test::draw_graph(seed);
      if (show)
        std::printf("%s\n", d.graph.dump().c_str());
      in_band += print(measure(d.name, d.graph));
      ++total;
    }
  } else {
    // One graph file: that graph alone; a folder: its graphs, then the table.
    bool one = std::filesystem::is_regular_file(examples);
    std::vector<std::filesystem::path> files;
    if (one)
      files.push_back(examples);
    else
      for (const auto& f : std::filesystem::directory_iterator(examples))
        if (f.path().extension() == ".json")
          files.push_back(f.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      in_band += print(measure((one ? "" : "examples/") + f.filename().string(), shortened(f)));
      ++total;
    }
    for (const auto& [name, g] : one ? decltype(generated()){} : generated()) {
      in_band += print(measure(name, test::sized_graph_json(g)));
      ++total;
    }
  }
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  summarize(rows);
  std::printf("\n%d of %d graphs within [0.9, 1.1] or rough with a reason; %d did not train (%.0f s)\n", in_band,
              total, failed, seconds);
  return in_band == total ? 0 : 1;
}
