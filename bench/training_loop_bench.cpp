// TrainingLoop steps/s against a bare libtorch loop written here: same model, same data, batch 64,
// AdamW, one intra-op thread, measured alternately in one process.
//
//   bench_training_loop [--rounds R=5] [--steps N=2000] [--warmup W=200] [--seed S=42]
//                       [--progress-ms P=100] [--reuse-data] [--bare-node]
//
// What is timed, and why it is fair:
//  - TrainingLoop side: a graph Dataset -> DataLoader -> Model -> Loss/Optimizer -> TrainingLoop
//    (max_steps = N) runs through cdui::runtime::execute. Only the TrainingLoop node is timed: the
//    engine's node_status "completed" event carries the node's own "seconds" (measured by the
//    engine around the node's run), so loading Fashion-MNIST and building the model, which are
//    separate nodes, are excluded. What remains is everything the node pays for: building the
//    optimizer, the per-batch work (shuffle, batch gather, forward/backward/step, loss.item,
//    throttled progress events, the stop flag), the end-of-epoch metric and the optimizer-state
//    snapshot it returns. The event sink only counts events (and reads the loop node's own
//    node_status/progress/metric events for the timings and the checks below).
//  - Bare side: the loop a practitioner writes by hand. The timer covers building the AdamW
//    optimizer and the loop itself (randperm per epoch, index_select, zero_grad, forward,
//    cross_entropy, backward, step, loss.item<double>()). Before each round it loads Fashion-MNIST
//    afresh, outside the timer, as the graph's Dataset node does before each TrainingLoop: a loop
//    over a dataset that has sat in memory for the whole process runs 3-9% faster on this VM than
//    one over a dataset loaded just before, whoever runs it (--reuse-data shows that).
//  - Allocators: the engine installs cdui's counting CPU allocator process-wide; the bare side
//    swaps libtorch's default back in for its rounds (see `allocators`).
//  - Both sides start each round from the same weights: the bare side initialises its layers from
//    a generator seeded like the engine's run generator, in the Model node's order, then draws its
//    epoch permutations from that generator as TrainingLoop does. Both therefore do exactly the
//    same arithmetic on the same batches, which the benchmark checks by comparing the loss of the
//    first batch and the mean loss of the first epoch (when a round covers a whole epoch).
//  - Each round runs both sides; the side that goes first alternates from round to round, so that
//    machine noise hits both; the median of each side is reported. A short warm-up of each side
//    runs first and is not counted. Also printed: the median of the per-round ratios, steps per
//    CPU-second of the training thread (CLOCK_THREAD_CPUTIME_ID; it leaves out the time other
//    processes hold the core) and minor page faults per step.
//  - --bare-node adds a third side: the same bare loop as a graph node (BenchBareLoop, registered
//    here) after the same Dataset/DataLoader/Model nodes, on the engine's allocator. TrainingLoop
//    vs bare-as-node isolates the TrainingLoop node's own code from everything around it.
//  - Page faults matter a lot on this kind of VM: with glibc's default 128 KiB mmap/trim
//    thresholds each step maps its ~1 MB of temporaries afresh and the loop runs ~10x slower.
//    glibc raises those thresholds itself once a mid-sized mmapped block is freed, which reading
//    the IDX files does (here and in the Dataset node), so both sides run with raised thresholds.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime/engine.hpp"
#include "runtime/node_call.hpp"
#include "runtime/nodes/values.hpp"
#include "runtime/validate.hpp"
#include "testkit/graphs.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

constexpr const char* data_root = "/usr/share/datasets/fashion-mnist";
// The Dataset node's normalisation of Fashion-MNIST (runtime/nodes/datasets.cpp).
constexpr double fashion_mnist_mean = 0.2860;
constexpr double fashion_mnist_std = 0.3530;
constexpr std::int64_t batch_size = 64;
constexpr double learning_rate = 1e-3;
constexpr double weight_decay = 0.01;  // AdamW's default in PyTorch; set explicitly on all sides

struct options {
  int rounds = 5;
  std::int64_t steps = 2000;
  std::int64_t warmup = 200;
  std::uint64_t seed = 42;
  std::int64_t progress_ms = 100;  // TrainingLoop's default
  bool reuse_data = false;  // bare side: one dataset for the whole process instead of one per round
  bool bare_node = false;   // a third side: the bare loop as a graph node (BenchBareLoop)
};

options parse_args(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc)
        throw std::runtime_error("missing value after " + a);
      return argv[++i];
    };
    if (a == "--rounds")
      o.rounds = std::stoi(next());
    else if (a == "--steps")
      o.steps = std::stoll(next());
    else if (a == "--warmup")
      o.warmup = std::stoll(next());
    else if (a == "--seed")
      o.seed = std::stoull(next());
    else if (a == "--progress-ms")
      o.progress_ms = std::stoll(next());
    else if (a == "--reuse-data")
      o.reuse_data = true;
    else if (a == "--bare-node")
      o.bare_node = true;
    else if (a == "-h" || a == "--help") {
      std::cout << "usage: bench_training_loop [--rounds R=5] [--steps N=2000] [--warmup W=200]"
                   " [--seed S=42] [--progress-ms P=100] [--reuse-data] [--bare-node]\n"
                   "  --reuse-data  the bare side trains on one dataset loaded at start (default: a\n"
                   "                dataset loaded afresh each round, as the graph's Dataset node does)\n"
                   "  --bare-node   also time the bare loop run as a graph node after the same\n"
                   "                Dataset/DataLoader/Model nodes: isolates TrainingLoop's own code\n";
      std::exit(0);
    } else {
      throw std::runtime_error("unknown argument " + a);
    }
  }
  if (o.rounds < 1 || o.steps < 1 || o.warmup < 0)
    throw std::runtime_error("--rounds and --steps must be >= 1, --warmup >= 0");
  return o;
}

// ---- data ------------------------------------------------------------------------------------

std::string read_gzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr)
    throw std::runtime_error("cannot open " + path + " (install dataset-fashion-mnist)");
  std::string bytes;
  std::vector<char> buf(1 << 16);
  int n = 0;
  while ((n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0)
    bytes.append(buf.data(), static_cast<std::size_t>(n));
  gzclose(f);
  if (n < 0)
    throw std::runtime_error("cannot decompress " + path);
  return bytes;
}

at::Tensor read_idx(const std::string& path) {
  auto bytes = read_gzip(path);
  auto u8 = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])); };
  if (bytes.size() < 4 || u8(0) != 0 || u8(1) != 0 || u8(2) != 8)
    throw std::runtime_error(path + " is not an IDX file of unsigned bytes");
  std::vector<std::int64_t> dims;
  for (std::size_t d = 0; d < u8(3); ++d) {
    auto o = 4 + 4 * d;
    dims.push_back((u8(o) << 24) | (u8(o + 1) << 16) | (u8(o + 2) << 8) | u8(o + 3));
  }
  auto header = 4 + 4 * dims.size();
  return torch::from_blob(bytes.data() + header, dims, torch::kUInt8).clone();
}

struct dataset {
  at::Tensor inputs;   // [N, 1, 28, 28] float32, normalised as the Dataset node does
  at::Tensor targets;  // [N] int64
};

dataset load_train_split() {
  auto images = read_idx(std::string(data_root) + "/train-images-idx3-ubyte.gz");
  auto labels = read_idx(std::string(data_root) + "/train-labels-idx1-ubyte.gz");
  dataset d;
  d.inputs = ((images.to(torch::kFloat32) / 255.0 - fashion_mnist_mean) / fashion_mnist_std)
               .unsqueeze(1)
               .contiguous();
  d.targets = labels.to(torch::kInt64);
  return d;
}

// ---- CPU allocators -----------------------------------------------------------------------------

/// The engine installs cdui's counting allocator as libtorch's process-wide CPU allocator on its
/// first execute(); from then on every tensor of the process would go through it. The bare side
/// must run on libtorch's own allocator, as a plain libtorch program does, and the TrainingLoop side
/// on whatever the engine installed, as a cdui run does: the benchmark swaps them around each side.
struct allocators {
  c10::Allocator* plain = c10::GetDefaultCPUAllocator();
  c10::Allocator* engine = nullptr;  // known after the first execute()
  // Above any priority the runtime uses (it installs once, at priority 1).
  static constexpr std::uint8_t priority = 255;

  void use_plain() const { c10::SetCPUAllocator(plain, priority); }
  void use_engine() const {
    if (engine != nullptr)
      c10::SetCPUAllocator(engine, priority);
  }
};

// ---- the bare libtorch loop --------------------------------------------------------------------

/// Minor page faults of the process so far: a step that allocates fresh pages from the kernel each
/// time (glibc returning freed tensors to it) shows up here.
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

/// CPU time of the calling thread: unlike wall time, it does not count the time other processes
/// on this small machine hold the core, so it is the steadier figure when the machine is busy.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct side_result {
  double seconds = 0.0;
  double cpu_seconds = 0.0;  // the training thread's CPU time in the timed part
  std::int64_t steps = 0;
  long faults = 0;  // minor page faults in the timed part
  double first_epoch_loss = std::nan("");  // mean over the first epoch's samples, if completed
  double first_batch_loss = std::nan("");
};

/// Flatten, Linear 784->256, ReLU, Linear 256->10, initialised like the Model node: PyTorch's
/// default U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight then bias, layer by layer, from `gen`.
torch::nn::Sequential make_model(at::Generator& gen) {
  namespace nn = torch::nn;
  nn::Sequential net(nn::Flatten(), nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  torch::NoGradGuard no_grad;
  for (const auto& child : net->children()) {
    if (auto* lin = child->as<nn::Linear>()) {
      auto bound = 1.0 / std::sqrt(static_cast<double>(lin->options.in_features()));
      for (auto& p : lin->parameters(false))
        p.uniform_(-bound, bound, gen);
    }
  }
  net->train();
  return net;
}

/// The timed part of the bare loop: build AdamW, then train `net` for max_steps batches drawn
/// from `gen`, as a practitioner writes it.
side_result bare_loop(const at::Tensor& inputs, const at::Tensor& targets, torch::nn::Sequential& net,
                      at::Generator& gen, std::int64_t max_steps) {
  const auto n = inputs.size(0);
  const auto batches = (n + batch_size - 1) / batch_size;
  side_result r;
  auto faults = minor_faults();
  auto cpu = thread_cpu_seconds();
  auto start = clock_type::now();
  torch::optim::AdamW optimizer(net->parameters(),
                                torch::optim::AdamWOptions(learning_rate).weight_decay(weight_decay));
  bool done = false;
  for (std::int64_t epoch = 1; !done; ++epoch) {
    auto order = torch::randperm(n, gen, torch::kInt64);
    double loss_sum = 0.0;
    std::int64_t samples = 0;
    for (std::int64_t b = 0; b < batches; ++b) {
      auto idx = order.narrow(0, b * batch_size, std::min(batch_size, n - b * batch_size));
      auto x = inputs.index_select(0, idx);
      auto y = targets.index_select(0, idx);
      optimizer.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
      loss.backward();
      optimizer.step();
      auto value = loss.item<double>();
      if (r.steps == 0)
        r.first_batch_loss = value;
      loss_sum += value * static_cast<double>(x.size(0));
      samples += x.size(0);
      if (++r.steps >= max_steps) {
        done = true;
        break;
      }
    }
    if (epoch == 1 && samples == n)
      r.first_epoch_loss = loss_sum / static_cast<double>(samples);
  }
  r.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  r.cpu_seconds = thread_cpu_seconds() - cpu;
  r.faults = minor_faults() - faults;
  return r;
}

/// `shared`: the dataset to train on, or null to load one afresh (not timed), as a program that
/// loads its data and then trains does, and as each TrainingLoop round's Dataset node does.
side_result run_bare(const dataset* shared, std::int64_t max_steps, std::uint64_t seed,
                     const allocators& alloc) {
  alloc.use_plain();
  dataset fresh;
  if (shared == nullptr)
    fresh = load_train_split();
  const auto& data = shared != nullptr ? *shared : fresh;
  // Not timed: the model (in the graph, this is the Model node's work).
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto net = make_model(gen);
  return bare_loop(data.inputs, data.targets, net, gen, max_steps);
}

// ---- the TrainingLoop side ---------------------------------------------------------------------

nlohmann::json graph_json(std::int64_t max_steps, std::int64_t progress_ms) {
  // Enough epochs that max_steps is what ends the loop.
  auto epochs = max_steps / (60000 / batch_size) + 2;
  auto g = cdui::test::training_graph_json(
    {{"name", "fashion_mnist"}, {"split", "train"}}, {{"batch_size", batch_size}, {"shuffle", true}},
    {{{"type", "Flatten"}},
     {{"type", "Linear"}, {"out_features", 256}},
     {{"type", "ReLU"}},
     {{"type", "Linear"}, {"out_features", 10}}},
    {{"name", "adamw"}, {"lr", learning_rate}, {"weight_decay", weight_decay}},
    {{"epochs", epochs}, {"max_steps", max_steps}, {"progress_interval_ms", progress_ms}});
  g["nodes"][3]["params"] = {{"kind", "cross_entropy"}};  // the Loss node
  return g;
}

/// What the BenchBareLoop node measured in its last run.
side_result bare_node_result;

/// The built-in nodes plus BenchBareLoop: the bare loop as a graph node, fed by the same Dataset,
/// DataLoader and Model nodes as TrainingLoop, on the engine's allocator. It runs the bare loop in
/// exactly the memory state a TrainingLoop run has (a dataset and a model built just before), so
/// TrainingLoop vs BenchBareLoop isolates the TrainingLoop node's own code.
const cdui::runtime::node_registry& bench_registry() {
  static const cdui::runtime::node_registry registry = [] {
    namespace rt = cdui::runtime;
    rt::node_registry r = rt::builtin_registry();
    rt::node_spec spec;
    spec.type = "BenchBareLoop";
    spec.help = "bench_training_loop's bare loop as a node";
    spec.params = {{"max_steps", rt::param_kind::integer, 1, 1, INFINITY, {}, ""}};
    spec.inputs = {{"model", "model", true, ""}, {"dataloader", "dataloader", true, ""}};
    spec.run = [](rt::node_call& call) -> rt::port_values {
      auto model = call.input<cdui::runtime::nodes::model_value>("model");
      auto loader = call.input<cdui::runtime::nodes::loader_value>("dataloader");
      at::set_num_threads(1);
      bare_node_result = bare_loop(loader->dataset->inputs, loader->dataset->targets, model->module,
                                   call.rng(), call.int_param("max_steps"));
      return {};
    };
    r.add(std::move(spec));
    return r;
  }();
  return registry;
}

cdui::runtime::validated_graph validated(std::int64_t max_steps, std::int64_t progress_ms,
                                         bool bare_node = false) {
  auto doc = graph_json(max_steps, progress_ms);
  if (bare_node) {
    for (auto& n : doc["nodes"])
      if (n["id"] == "loop")
        n = {{"id", "loop"}, {"type", "BenchBareLoop"}, {"params", {{"max_steps", max_steps}}}};
    auto& edges = doc["edges"];
    for (auto e = edges.begin(); e != edges.end();)
      e = ((*e)["to"] == "loop.loss_fn" || (*e)["to"] == "loop.optimizer") ? edges.erase(e) : e + 1;
  }
  auto result = cdui::runtime::validate_graph(doc, bench_registry());
  if (auto* errors = std::get_if<std::vector<cdui::runtime::graph_error>>(&result)) {
    std::string text = "benchmark graph is invalid:";
    for (const auto& e : *errors)
      text += "\n  " + e.message;
    throw std::runtime_error(text);
  }
  return std::get<cdui::runtime::validated_graph>(std::move(result));
}

struct loop_run {
  side_result result;
  std::int64_t events = 0;
};

loop_run run_loop(const cdui::runtime::validated_graph& graph, const std::filesystem::path& dir,
                  std::uint64_t seed, allocators& alloc) {
  alloc.use_engine();
  loop_run out;
  double loop_seconds = -1.0;
  long faults = 0;
  double cpu = 0.0;
  cdui::runtime::run_context ctx;
  ctx.run_id = "bench";
  ctx.run_dir = dir;
  ctx.seed = seed;
  ctx.num_threads = 1;
  ctx.stop = std::make_shared<std::atomic<bool>>(false);
  // The sink counts events, which is all a consumer must cost the engine; it also picks the loop
  // node's own duration out of its node_status "completed" event (one event per node per run).
  ctx.emit = [&](const std::string& type, const nlohmann::json& data) {
    ++out.events;
    if (type == "node_status" && data["node"] == "loop" && data["status"] == "running") {
      faults = minor_faults();
      cpu = thread_cpu_seconds();
    } else if (type == "node_status" && data["node"] == "loop" && data["status"] == "completed") {
      loop_seconds = data["seconds"].get<double>();
      out.result.cpu_seconds = thread_cpu_seconds() - cpu;
      out.result.faults = minor_faults() - faults;
    }
    else if (type == "progress" && data["step"] == 1)
      out.result.first_batch_loss = data["loss"].get<double>();
    else if (type == "metric" && data["name"] == "train_loss" && data["step"] == 1)
      out.result.first_epoch_loss = data["value"].get<double>();
  };
  auto outcome = cdui::runtime::execute(graph, ctx);
  if (alloc.engine == nullptr)
    alloc.engine = c10::GetCPUAllocator();
  if (outcome.status != cdui::run_status::succeeded || loop_seconds < 0)
    throw std::runtime_error("the TrainingLoop run did not complete: " + outcome.error);
  auto metrics = nlohmann::json::parse(outcome.final_metrics).at("loop");
  out.result.seconds = loop_seconds;
  out.result.steps = metrics.at("total_steps").get<std::int64_t>();
  return out;
}

side_result run_bare_node(const cdui::runtime::validated_graph& graph,
                          const std::filesystem::path& dir, std::uint64_t seed, allocators& alloc) {
  alloc.use_engine();
  cdui::runtime::run_context ctx;
  ctx.run_id = "bench-bare-node";
  ctx.run_dir = dir;
  ctx.seed = seed;
  ctx.num_threads = 1;
  ctx.stop = std::make_shared<std::atomic<bool>>(false);
  std::int64_t events = 0;
  ctx.emit = [&](const std::string&, const nlohmann::json&) { ++events; };
  bare_node_result = {};
  auto outcome = cdui::runtime::execute(graph, ctx);
  if (outcome.status != cdui::run_status::succeeded)
    throw std::runtime_error("the BenchBareLoop run did not complete: " + outcome.error);
  return bare_node_result;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

} // namespace

int main(int argc, char** argv) try {
  auto opt = parse_args(argc, argv);
  at::set_num_threads(1);
  auto dir = std::filesystem::temp_directory_path()
             / ("cdui-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);

  std::printf("TrainingLoop vs bare libtorch: Fashion-MNIST train, MLP 784-256-10, AdamW lr %g wd %g,"
              " batch %lld, shuffle, %d intra-op thread(s)\n",
              learning_rate, weight_decay, static_cast<long long>(batch_size), at::get_num_threads());
  std::printf("%d rounds x %lld steps, alternating; warm-up %lld steps each; progress_interval_ms %lld\n",
              opt.rounds, static_cast<long long>(opt.steps), static_cast<long long>(opt.warmup),
              static_cast<long long>(opt.progress_ms));
  std::fflush(stdout);

  dataset shared_data;
  if (opt.reuse_data)
    shared_data = load_train_split();
  const dataset* shared = opt.reuse_data ? &shared_data : nullptr;
  auto graph = validated(opt.steps, opt.progress_ms);
  auto node_graph = validated(opt.steps, opt.progress_ms, /*bare_node=*/true);
  allocators alloc;
  {
    // The TrainingLoop warm-up runs first, and always (one step at least): its execute() installs
    // the engine's CPU allocator, which the benchmark must learn before it swaps allocators.
    auto warm = validated(std::max<std::int64_t>(opt.warmup, 1), opt.progress_ms);
    (void)run_loop(warm, dir, opt.seed, alloc);
    if (opt.warmup > 0)
      (void)run_bare(shared, opt.warmup, opt.seed, alloc);
  }
  std::printf("bare side: %s; CPU allocator: bare side libtorch's default, TrainingLoop side %s\n",
              opt.reuse_data ? "one dataset loaded at start (--reuse-data)"
                             : "a dataset loaded afresh (untimed) before each round, like the graph",
              alloc.engine == alloc.plain ? "libtorch's default too (the engine installed none)"
                                          : "the one the engine installed (cdui's counting allocator)");

  // Each round runs every side once; the side that goes first rotates from round to round, so no
  // side always follows the same one.
  enum side { bare_side, loop_side, node_side };
  std::vector<side> sides{bare_side, loop_side};
  if (opt.bare_node)
    sides.push_back(node_side);
  std::vector<double> bare_rates, loop_rates, node_rates, pair_ratios, node_pair_ratios;
  std::vector<double> bare_cpu_rates, loop_cpu_rates;
  side_result last_bare, last_loop, last_node;
  std::int64_t events = 0;
  auto rate = [](const side_result& x, double seconds) { return static_cast<double>(x.steps) / seconds; };
  for (int r = 1; r <= opt.rounds; ++r) {
    for (std::size_t k = 0; k < sides.size(); ++k) {
      switch (sides[(k + static_cast<std::size_t>(r) - 1) % sides.size()]) {
      case bare_side:
        last_bare = run_bare(shared, opt.steps, opt.seed, alloc);
        break;
      case loop_side: {
        auto l = run_loop(graph, dir, opt.seed, alloc);
        last_loop = l.result;
        events = l.events;
        break;
      }
      case node_side:
        last_node = run_bare_node(node_graph, dir, opt.seed, alloc);
        break;
      }
      at::set_num_threads(1);
    }
    if (last_bare.steps != opt.steps || last_loop.steps != opt.steps
        || (opt.bare_node && last_node.steps != opt.steps))
      throw std::runtime_error("a side ran another number of steps than --steps");
    bare_rates.push_back(rate(last_bare, last_bare.seconds));
    loop_rates.push_back(rate(last_loop, last_loop.seconds));
    pair_ratios.push_back(loop_rates.back() / bare_rates.back());
    bare_cpu_rates.push_back(rate(last_bare, last_bare.cpu_seconds));
    loop_cpu_rates.push_back(rate(last_loop, last_loop.cpu_seconds));
    std::printf("round %d: bare %.0f steps/s, TrainingLoop %.0f steps/s (%.3f); per CPU-second:"
                " bare %.0f, TrainingLoop %.0f (%.3f)",
                r, bare_rates.back(), loop_rates.back(), pair_ratios.back(), bare_cpu_rates.back(),
                loop_cpu_rates.back(), loop_cpu_rates.back() / bare_cpu_rates.back());
    if (opt.bare_node) {
      node_rates.push_back(rate(last_node, last_node.seconds));
      node_pair_ratios.push_back(loop_rates.back() / node_rates.back());
      std::printf("; bare-as-node %.0f steps/s", node_rates.back());
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  std::filesystem::remove_all(dir);

  auto bare = median(bare_rates);
  auto loop = median(loop_rates);
  std::printf("events per TrainingLoop run: %lld\n", static_cast<long long>(events));
  std::printf("minor page faults per step (last round): bare %.2f, TrainingLoop %.2f\n",
              static_cast<double>(last_bare.faults) / static_cast<double>(last_bare.steps),
              static_cast<double>(last_loop.faults) / static_cast<double>(last_loop.steps));
  std::printf("same computation: first-batch loss bare %.9f, TrainingLoop %.9f (%s)\n",
              last_bare.first_batch_loss, last_loop.first_batch_loss,
              last_bare.first_batch_loss == last_loop.first_batch_loss ? "identical" : "DIFFERENT");
  if (!std::isnan(last_bare.first_epoch_loss) && !std::isnan(last_loop.first_epoch_loss))
    std::printf("same computation: first-epoch mean loss bare %.9f, TrainingLoop %.9f (%s)\n",
                last_bare.first_epoch_loss, last_loop.first_epoch_loss,
                last_bare.first_epoch_loss == last_loop.first_epoch_loss ? "identical" : "DIFFERENT");
  if (opt.bare_node)
    std::printf("bare-as-node: %.0f steps/s (median of %d); TrainingLoop/bare-as-node: %.3f, median"
                " of the per-round ratios %.3f\n",
                median(node_rates), opt.rounds, loop / median(node_rates), median(node_pair_ratios));
  std::printf("per CPU-second of the training thread (steadier on a busy machine): bare %.0f,"
              " TrainingLoop %.0f, ratio %.3f\n",
              median(bare_cpu_rates), median(loop_cpu_rates),
              median(loop_cpu_rates) / median(bare_cpu_rates));
  std::printf("median of the per-round ratios: %.3f\n", median(pair_ratios));
  std::printf("bare libtorch: %.0f steps/s (median of %d)\n", bare, opt.rounds);
  std::printf("TrainingLoop: %.0f steps/s (median of %d)\n", loop, opt.rounds);
  std::printf("ratio TrainingLoop/bare: %.3f (goal >= 0.95)\n", loop / bare);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_training_loop: %s\n", e.what());
  return 1;
}
