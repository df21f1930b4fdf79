// Training memory, measured by the counting allocator on a simulated card, printed side by side:
//   peak bytes against batch size (linear in the activation term),
//   bf16 / fp32 activation bytes (goal <= 0.6),
//   activation term at batch 8 x accumulate_steps 4 / at batch 32 (goal <= 0.3),
//   steps/s fp32 vs bf16 on this CPU.
// Usage: bench_memory [steps for the speed comparison, default 300]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "devices/memory.hpp"
#include "runtime/engine.hpp"
#include "runtime/fit.hpp"
#include "runtime/malloc_thresholds.hpp"
#include "testkit/graphs.hpp"

using nlohmann::json;
using namespace cdui;

namespace {

/// Fashion-MNIST (2048 samples) into `layers` on a sim card, plain SGD, one intra-op thread.
json graph_of(const json& layers, std::int64_t batch, std::int64_t accumulate, const std::string& precision,
              std::int64_t max_steps, bool checkpoint = false) {
  auto g = test::training_graph_json({{"name", "fashion_mnist"}, {"limit", 2048}},
                                     {{"batch_size", batch}}, layers, {{"name", "sgd"}, {"lr", 0.01}},
                                     {{"accumulate_steps", accumulate},
                                      {"precision", precision},
                                      // max_steps decides how long it trains (2048 samples are
                                      // 32 batches of 64: one epoch would stop it first)
                                      {"epochs", max_steps > 0 ? 1'000'000 : 1},
                                      {"max_steps", max_steps},
                                      {"num_threads", 1},
                                      {"device", "sim:0"}});
  g["nodes"][2]["params"]["checkpoint_activations"] = checkpoint;
  return g;
}

/// Fashion-MNIST (2048 samples) into a 784-1024-1024-10 MLP: wide enough that activations show.
json graph(std::int64_t batch, std::int64_t accumulate, const std::string& precision,
           std::int64_t max_steps, bool convolutional = false) {
  // A small CNN whose feature maps dwarf its weights: the case accumulation is for.
  json cnn = {{{"type", "Conv2d"}, {"out_channels", 16}, {"kernel_size", 3}, {"padding", 1}},
              {{"type", "ReLU"}},
              {{"type", "Conv2d"}, {"out_channels", 16}, {"kernel_size", 3}, {"padding", 1}},
              {{"type", "ReLU"}},
              {{"type", "Flatten"}},
              {{"type", "Linear"}, {"out_features", 10}}};
  json mlp = {{{"type", "Flatten"}},
              {{"type", "Linear"}, {"out_features", 1024}},
              {{"type", "ReLU"}},
              {{"type", "Linear"}, {"out_features", 1024}},
              {{"type", "ReLU"}},
              {{"type", "Linear"}, {"out_features", 10}}};
  return graph_of(convolutional ? cnn : mlp, batch, accumulate, precision, max_steps);
}

runtime::validated_graph validated(const json& g) {
  return std::get<runtime::validated_graph>(runtime::validate_graph(g));
}

struct measured {
  std::int64_t peak = 0;
  std::int64_t activations = 0;
  double loop_seconds = 0;
  std::int64_t steps = 0;
  /// Optimizer steps a second, over the TrainingLoop's own time.
  [[nodiscard]] double rate() const { return static_cast<double>(steps) / loop_seconds; }
};

/// Runs the graph on a 64 GiB simulated card; the peak and the TrainingLoop's own time.
measured run(const json& g) {
  runtime::run_context ctx;
  ctx.run_id = "bench";
  ctx.run_dir = std::filesystem::temp_directory_path() / "cdui-bench-memory";
  ctx.num_threads = 1;
  ctx.host.sim_count = 1;
  ctx.host.sim_total_bytes = {64LL << 30};
  measured m;
  ctx.emit = [&](const std::string& type, const json& data) {
    if (type == "node_status" && data["node"] == "loop" && data["status"] == "completed")
      m.loop_seconds = data["seconds"].get<double>();
  };
  auto outcome = runtime::execute(validated(g), ctx);
  if (outcome.status != run_status::succeeded) {
    std::fprintf(stderr, "bench run failed: %s\n", outcome.error.c_str());
    std::exit(1);
  }
  auto loop = json::parse(outcome.final_metrics)["loop"];
  m.peak = loop["peak_memory_bytes"]["sim:0"].get<std::int64_t>();
  m.activations = loop["activation_bytes"]["sim:0"].get<std::int64_t>();
  m.steps = loop["total_steps"].get<std::int64_t>();
  return m;
}

/// Peaks of one step at batches 1, 2, 4, ..., 256 (cdui fit's probes on an ample card).
std::vector<runtime::fit_probe> peaks(const std::string& precision) {
  return runtime::fit_batch_size(validated(graph(256, 1, precision, 0)), 64LL << 30).probes;
}

/// Activation bytes per sample: the slope of peak against batch between 32 and 256.
double slope(const std::vector<runtime::fit_probe>& p) {
  auto at = [&](std::int64_t b) {
    return std::find_if(p.begin(), p.end(), [&](auto& x) { return x.batch_size == b; })->peak_bytes;
  };
  return static_cast<double>(at(256) - at(32)) / (256 - 32);
}

/// The layers of an example's Model node.
json example_layers(const std::string& name) {
  std::ifstream in{std::string{CDUI_SOURCE_DIR} + "/examples/" + name};
  auto doc = json::parse(in);
  for (const auto& node : doc["nodes"])
    if (node["type"] == "Model")
      return node["params"]["layers"];
  std::fprintf(stderr, "examples/%s has no Model node\n", name.c_str());
  std::exit(1);
}

/// checkpoint_activations against none, side by side, at each checkpoint_granularity: what the
/// forward pass keeps, the peak, and the TrainingLoop's time over `steps` steps (median of 3,
/// alternating so noise hits all three).
void checkpointing(std::int64_t steps) {
  // Blocks with something of their own to keep (a norm, GELU's input, a dropout mask), as a deeper
  // MLP has them: four of Linear 1024, LayerNorm, GELU, Dropout, then Linear 10.
  json deep = json::array({{{"type", "Flatten"}}});
  for (int i = 0; i < 4; ++i)
    for (const auto& l : json::array({{{"type", "Linear"}, {"out_features", 1024}}, {{"type", "LayerNorm"}},
                                      {{"type", "GELU"}}, {{"type", "Dropout"}, {"p", 0.1}}}))
      deep.push_back(l);
  deep.push_back({{"type", "Linear"}, {"out_features", 10}});
  std::printf("\nActivation checkpointing (batch 64, fp32): kept by the forward pass, the peak, steps/s\n");
  std::printf("%-28s %-10s %12s %12s %6s %12s %12s %6s %9s %9s %6s\n", "model", "granularity", "kept", "kept ckpt",
              "ratio", "peak", "peak ckpt", "ratio", "steps/s", "ckpt", "time");
  const std::vector<std::string> granularities{"selective", "full"};
  for (const auto& [name, layers] : {std::pair{std::string{"fashion_mnist_mlp example"}, example_layers("fashion_mnist_mlp.json")},
                                     std::pair{std::string{"fashion_mnist_cnn example"}, example_layers("fashion_mnist_cnn.json")},
                                     std::pair{std::string{"deep MLP (LayerNorm, GELU)"}, deep}}) {
    auto checkpointed = [&, &layers = layers](const std::string& granularity, std::int64_t max_steps) {
      auto g = graph_of(layers, 64, 1, "fp32", max_steps, true);
      g["nodes"][2]["params"]["checkpoint_granularity"] = granularity;
      return run(g);
    };
    auto plain = run(graph_of(layers, 64, 1, "fp32", 4));
    std::vector<double> rate;
    std::vector<std::vector<double>> rate_ckpt(granularities.size());
    for (int round = 0; round < 3; ++round) {
      rate.push_back(run(graph_of(layers, 64, 1, "fp32", steps)).rate());
      for (std::size_t k = 0; k < granularities.size(); ++k)
        rate_ckpt[k].push_back(checkpointed(granularities[k], steps).rate());
    }
    std::sort(rate.begin(), rate.end());
    for (std::size_t k = 0; k < granularities.size(); ++k) {
      auto ckpt = checkpointed(granularities[k], 4);
      std::sort(rate_ckpt[k].begin(), rate_ckpt[k].end());
      std::printf("%-28s %-10s %12lld %12lld %6.2f %12lld %12lld %6.2f %9.1f %9.1f %6.2f\n", name.c_str(),
                  granularities[k].c_str(), static_cast<long long>(plain.activations),
                  static_cast<long long>(ckpt.activations),
                  static_cast<double>(ckpt.activations) / static_cast<double>(plain.activations),
                  static_cast<long long>(plain.peak), static_cast<long long>(ckpt.peak),
                  static_cast<double>(ckpt.peak) / static_cast<double>(plain.peak), rate[1], rate_ckpt[k][1],
                  rate[1] / rate_ckpt[k][1]);
    }
  }
  std::printf("goals: kept ratio <= 0.5, time (step time with / without) <= 1.4\n");
}

} // namespace

int main(int argc, char** argv) {
  runtime::set_malloc_thresholds();  // as cdui's own processes train
  auto steps = argc > 1 ? std::atoll(argv[1]) : 300;
  std::printf("MLP: 784-1024-1024-10, plain SGD (its step allocates nothing, so the peak shows the activations), Fashion-MNIST, one intra-op thread, sim card\n\n");

  auto fp32 = peaks("fp32");
  auto bf16 = peaks("bf16");
  std::printf("%8s  %14s  %14s\n", "batch", "fp32 peak", "bf16 peak");
  for (std::size_t i = 0; i < fp32.size(); ++i)
    std::printf("%8lld  %14lld  %14lld\n", static_cast<long long>(fp32[i].batch_size),
                static_cast<long long>(fp32[i].peak_bytes), static_cast<long long>(bf16[i].peak_bytes));
  auto s32 = slope(fp32), s16 = slope(bf16);
  auto fixed = static_cast<double>(fp32.front().peak_bytes) - s32;  // the batch-independent term
  // Linearity: the slope over 32..64 against the slope over 128..256.
  auto at = [&](std::int64_t b) { return static_cast<double>(fp32[static_cast<std::size_t>(std::log2(b))].peak_bytes); };
  std::printf("\nfp32 activation bytes per sample: %.0f (32..64: %.0f, 128..256: %.0f)\n", s32,
              (at(64) - at(32)) / 32, (at(256) - at(128)) / 128);
  std::printf("fixed term (parameters and gradients): %s\n",
              devices::format_bytes(static_cast<std::int64_t>(fixed)).c_str());
  std::printf("ratio bf16/fp32 activation bytes: %.2f (goal <= 0.6)\n", s16 / s32);

  // Like with like: each activation term is its peak less the peak of the same configuration at
  // batch 1, since accumulating also holds the window's gradient while the next micro-batch's is
  // computed (a fixed cost of accumulation, not an activation). Measured on a CNN whose feature
  // maps dwarf its weights; on the MLP above the peak falls on a weight-sized gradient temporary.
  auto accumulated = run(graph(8, 4, "fp32", 1, true)).peak;
  auto accumulated_1 = run(graph(1, 4, "fp32", 1, true)).peak;
  auto full = run(graph(32, 1, "fp32", 1, true)).peak;
  auto full_1 = run(graph(1, 1, "fp32", 1, true)).peak;
  std::printf("\nCNN (two 16-channel 3x3 convolutions on 28x28, then Linear 10):\n");
  std::printf("peak at batch 8 x accumulate_steps 4: %lld (at 1 x 4: %lld); at batch 32: %lld (at 1: %lld)\n",
              static_cast<long long>(accumulated), static_cast<long long>(accumulated_1),
              static_cast<long long>(full), static_cast<long long>(full_1));
  std::printf("accumulation's fixed cost (a second gradient during backward): %s\n",
              devices::format_bytes(accumulated_1 - full_1).c_str());
  std::printf("ratio activation term 8x4 / 32: %.2f (goal <= 0.3)\n",
              static_cast<double>(accumulated - accumulated_1) / static_cast<double>(full - full_1));

  // Speed, alternating so noise hits both: the TrainingLoop node's time over `steps` steps.
  std::vector<double> rate32, rate16;
  for (int round = 0; round < 3; ++round) {
    rate32.push_back(run(graph(64, 1, "fp32", steps)).rate());
    rate16.push_back(run(graph(64, 1, "bf16", steps)).rate());
  }
  std::sort(rate32.begin(), rate32.end());
  std::sort(rate16.begin(), rate16.end());
  std::printf("steps/s at batch 64 (median of 3): fp32 %.1f, bf16 %.1f, ratio bf16/fp32 %.2f\n",
              rate32[1], rate16[1], rate16[1] / rate32[1]);
  checkpointing(steps);
  std::filesystem::remove_all(std::filesystem::temp_directory_path() / "cdui-bench-memory");
  return 0;
}
