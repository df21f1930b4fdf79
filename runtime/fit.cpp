#include "runtime/fit.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "devices/device.hpp"
#include "runtime/engine.hpp"

namespace cdui::runtime {

namespace {

/// A probe's epochs: its last step is in the first, or at the latest the next epoch's first window.
constexpr std::int64_t probe_epochs = 2;

/// Optimizer steps a probe of `batch` x `accumulate` trains so that a full micro-batch runs after
/// the first step, in the state every later step of a run is in (fit_steady_state_steps at
/// least). `samples` is the dataset's size (0: not known yet, as at the first probe, batch 1).
/// When an epoch has fewer than two windows of full batches, the second step is the epoch's short
/// window: it takes the next epoch's first window, whose batches are full again.
std::int64_t steps_into_steady_state(std::int64_t samples, bool drop_last, std::int64_t batch,
                                     std::int64_t accumulate) {
  auto full = samples / batch;
  if (samples == 0 || full >= fit_steady_state_steps * accumulate)
    return fit_steady_state_steps;
  auto batches = drop_last ? full : (samples + batch - 1) / batch;
  return (batches + accumulate - 1) / accumulate + 1;
}

/// What a fit works on: the first TrainingLoop, the DataLoader feeding it, and the batch the graph
/// asks for.
struct fit_target {
  std::string loop_node;
  std::string loader_node;
  std::int64_t memory_bytes = 0;
  std::int64_t batch = 0;
  std::int64_t accumulate = 1;
  bool drop_last = false;
  [[nodiscard]] std::int64_t effective_batch() const { return batch * accumulate; }
};

fit_target find_target(const validated_graph& g, std::int64_t memory_bytes) {
  fit_target t;
  t.memory_bytes = memory_bytes;
  for (const auto& n : g.g.nodes)
    if (n.type == "TrainingLoop" && t.loop_node.empty()) {
      t.loop_node = n.id;
      t.accumulate = n.params["accumulate_steps"].get<std::int64_t>();
    }
  if (t.loop_node.empty())
    throw std::invalid_argument("the graph has no TrainingLoop to fit");
  for (const auto& e : g.g.edges)
    if (e.to.node == t.loop_node && e.to.port == "dataloader")
      t.loader_node = e.from.node;
  for (const auto& n : g.g.nodes)
    if (n.id == t.loader_node) {
      t.batch = n.params["batch_size"].get<std::int64_t>();
      t.drop_last = n.params.value("drop_last", false);
    }
  if (t.loader_node.empty() || t.batch == 0)
    throw std::invalid_argument("TrainingLoop " + t.loop_node + " is not fed by a DataLoader");
  return t;
}

/// A temporary folder for the probes' run folders, removed with everything in it.
struct probe_dir {
  std::filesystem::path path = std::filesystem::temp_directory_path()
                               / ("cdui-fit-" + std::to_string(std::random_device{}()));
  probe_dir() { std::filesystem::create_directories(path); }
  ~probe_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  probe_dir(const probe_dir&) = delete;
  probe_dir& operator=(const probe_dir&) = delete;
};

/// Counts the training samples a timed probe ran and the time they took, from its progress events
/// (one after every batch, each with its batch's samples), leaving out the warm-up; asks the run to
/// stop once `seconds` of training were timed. A timed probe has no validation pass, so the gaps
/// between epochs are only the next epoch's shuffle.
class throughput_clock {
public:
  throughput_clock(std::int64_t warmup_steps, double seconds) : warmup_(warmup_steps), seconds_(seconds) {}

  void on_progress(const nlohmann::json& data) {
    auto now = std::chrono::steady_clock::now();
    if (started_) {
      timed_ += std::chrono::duration<double>(now - last_).count();
      samples_ += data.value("batch_samples", std::int64_t{0});
    } else if (data.value("step", 0L) >= warmup_) {
      started_ = true;
    }
    last_ = now;
    if (timed_ >= seconds_)
      stop->store(true);
  }

  [[nodiscard]] double samples_per_s() const { return timed_ > 0 ? static_cast<double>(samples_) / timed_ : 0.0; }

  std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);

private:
  std::int64_t warmup_;
  double seconds_;
  bool started_ = false;
  std::chrono::steady_clock::time_point last_;
  double timed_ = 0;
  std::int64_t samples_ = 0;
};

/// The graph cut down to one probe: the loop and what feeds it, the loader at `batch`, the loop on
/// sim:0 for `steps` optimizer steps of `accumulate` micro-batches each.
nlohmann::json probe_graph(const validated_graph& g, const fit_target& r, std::int64_t batch,
                           std::int64_t accumulate, std::int64_t steps) {
  // A timed probe (steps 0) leaves validation out: its samples per second are training's.
  auto kept_edge = [&](const graph_edge& e) {
    return steps > 0 || e.to.node != r.loop_node || e.to.port != "val_dataloader";
  };
  std::set<std::string> keep{r.loop_node};
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& e : g.g.edges)
      if (kept_edge(e) && keep.count(e.to.node) && keep.insert(e.from.node).second)
        grew = true;
  }
  nlohmann::json doc{{"nodes", nlohmann::json::array()}, {"edges", nlohmann::json::array()}};
  for (const auto& n : g.g.nodes) {
    if (!keep.count(n.id))
      continue;
    auto params = n.params;
    if (n.id == r.loader_node)
      params["batch_size"] = batch;
    if (n.id == r.loop_node) {
      // steps 0: a timed probe, stopped by its clock, with a progress event after every batch.
      params["max_steps"] = steps;
      params["epochs"] = steps > 0 ? probe_epochs : 1'000'000;
      params["accumulate_steps"] = accumulate;
      params["device"] = "sim:0";
      if (steps == 0)
        params["progress_interval_ms"] = 0;
    }
    doc["nodes"].push_back({{"id", n.id}, {"type", n.type}, {"params", params}});
  }
  for (const auto& e : g.g.edges)
    if (kept_edge(e) && keep.count(e.to.node))
      doc["edges"].push_back({{"from", e.from.node + "." + e.from.port},
                              {"to", e.to.node + "." + e.to.port}});
  return doc;
}

/// Runs probes of one fit: each a real run of the cut-down graph on a sim card of the budget.
class prober {
public:
  prober(const validated_graph& g, const fit_target& r, std::filesystem::path dir)
    : g_(g), r_(r), dir_(std::move(dir)) {}

  /// Into the steady state (fit_steady_state_steps), for its peak.
  fit_probe operator()(std::int64_t batch, std::int64_t accumulate) {
    return run(batch, accumulate, steps_into_steady_state(samples_, r_.drop_last, batch, accumulate), nullptr);
  }

  /// Past the warm-up and then for `seconds` of training, for its samples per second too.
  fit_probe timed(std::int64_t batch, double seconds) {
    throughput_clock clock{throughput_warmup_steps, seconds};
    auto p = run(batch, 1, 0, &clock);
    p.samples_per_s = p.fits ? clock.samples_per_s() : 0.0;
    return p;
  }

private:
  fit_probe run(std::int64_t batch, std::int64_t accumulate, std::int64_t steps, throughput_clock* clock) {
    auto checked = validate_graph(probe_graph(g_, r_, batch, accumulate, steps));
    if (auto* errors = std::get_if<std::vector<graph_error>>(&checked))
      throw std::invalid_argument(to_string(*errors));
    run_context ctx;
    ctx.run_id = "fit";
    ctx.run_dir = dir_;
    ctx.seed = 0;
    // The intra-op threads a run on a host of one sim card gets (host_inventory::cores_per_run).
    ctx.num_threads = devices::cpu_share(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), 1);
    ctx.host.sim_count = 1;
    ctx.host.sim_total_bytes = {r_.memory_bytes};
    ctx.emit = [](const std::string&, const nlohmann::json&) {};
    if (clock != nullptr) {
      ctx.stop = clock->stop;
      ctx.emit = [clock](const std::string& type, const nlohmann::json& data) {
        if (type == "progress")
          clock->on_progress(data);
      };
    }
    auto outcome = execute(std::get<validated_graph>(checked), ctx);
    // A timed probe ends cancelled, by its clock: it trained.
    bool trained = outcome.status == run_status::succeeded
                   || (clock != nullptr && outcome.status == run_status::cancelled);
    fit_probe probe{batch, accumulate, trained, 0};
    auto metrics = outcome.final_metrics.empty() ? nlohmann::json::object()
                                                 : nlohmann::json::parse(outcome.final_metrics);
    // At batch 1, the loader's batches are the dataset's samples, drop_last or not.
    if (samples_ == 0 && batch == 1 && metrics[r_.loader_node].contains("batches"))
      samples_ = metrics[r_.loader_node]["batches"].get<std::int64_t>();
    if (probe.fits) {
      probe.peak_bytes = metrics[r_.loop_node]["peak_memory_bytes"]["sim:0"].get<std::int64_t>();
    } else if (outcome.error.find("ran out of memory") == std::string::npos) {
      throw std::invalid_argument("a probe at batch_size " + std::to_string(batch)
                                  + " failed for another reason than memory: " + outcome.error);
    }
    return probe;
  }

  const validated_graph& g_;
  const fit_target& r_;
  std::filesystem::path dir_;
  std::int64_t samples_ = 0;
};

/// batch_size x accumulate_steps == intended with the fewest accumulate_steps whose batch is at
/// most `largest`; when no divisor is, the closest effective batch from above.
void suggest(fit_report& r, std::int64_t largest) {
  auto e = r.intended_effective_batch;
  r.exact = true;
  for (std::int64_t n = 1; n <= e; ++n) {
    if (e % n == 0 && e / n <= largest) {
      r.suggested_batch = e / n;
      r.suggested_accumulate = n;
      return;
    }
  }
  r.exact = false;
  r.suggested_accumulate = (e + largest - 1) / largest;
  r.suggested_batch = (e + r.suggested_accumulate - 1) / r.suggested_accumulate;
}

/// Suggests, and trains the suggestion itself (its batch_size with its accumulate_steps) unless a
/// probe already did: only a suggestion that trained under the memory is made. One that does not
/// (accumulation holds a few bytes more than one batch per step) lowers the bound below it.
void suggest_what_trains(fit_report& r,
                         const std::function<fit_probe(std::int64_t, std::int64_t)>& probe) {
  for (auto largest = r.largest_batch; largest > 0; largest = r.suggested_batch - 1) {
    suggest(r, largest);
    auto ran = std::find_if(r.probes.begin(), r.probes.end(), [&](const fit_probe& p) {
      return p.batch_size == r.suggested_batch && p.accumulate_steps == r.suggested_accumulate;
    });
    auto p = ran != r.probes.end() ? *ran : probe(r.suggested_batch, r.suggested_accumulate);
    if (p.fits) {
      r.suggested_peak_bytes = p.peak_bytes;
      return;
    }
  }
  r.suggested_batch = 0;
  r.suggested_accumulate = 0;
}

} // namespace

fit_report fit_batch_size(const validated_graph& g, std::int64_t memory_bytes,
                          const std::function<void(const fit_probe&)>& on_probe) {
  auto target = find_target(g, memory_bytes);
  fit_report r;
  r.memory_bytes = memory_bytes;
  r.loop_node = target.loop_node;
  r.loader_node = target.loader_node;
  r.intended_effective_batch = target.effective_batch();
  probe_dir dir;
  prober run_probe{g, target, dir.path};
  auto probe = [&](std::int64_t b, std::int64_t n) {
    auto p = run_probe(b, n);
    r.probes.push_back(p);
    if (on_probe)
      on_probe(p);
    return p;
  };
  // Doubling finds a bracket [fits, fails); no need to go past the effective batch the graph
  // wants, since a larger micro-batch than that is never what the user asked for.
  std::int64_t good = 0, bad = 0;
  for (std::int64_t b = 1;; b *= 2) {
    auto capped = std::min(b, r.intended_effective_batch);
    if (probe(capped, 1).fits) {
      good = capped;
      if (capped == r.intended_effective_batch)
        break;
    } else {
      bad = capped;
      break;
    }
  }
  while (bad > 0 && bad - good > 1) {
    auto mid = good + (bad - good) / 2;
    (probe(mid, 1).fits ? good : bad) = mid;
  }
  r.largest_batch = good;
  suggest_what_trains(r, probe);
  return r;
}

std::int64_t fit_effective_batch(const validated_graph& g) {
  return find_target(g, 0).effective_batch();
}

std::vector<fit_probe> fit_throughput(const validated_graph& g, std::int64_t memory_bytes,
                                      const std::vector<std::int64_t>& batch_sizes, double seconds,
                                      const std::function<void(const fit_probe&)>& on_probe) {
  auto target = find_target(g, memory_bytes);
  probe_dir dir;
  prober run_probe{g, target, dir.path};
  std::vector<fit_probe> out;
  for (auto b : batch_sizes) {
    out.push_back(run_probe.timed(b, seconds));
    if (on_probe)
      on_probe(out.back());
  }
  return out;
}

fit_ladder_report fit_ladder(const validated_graph& g, std::int64_t memory_bytes,
                             const std::function<void(const fit_probe&)>& on_rung) {
  auto target = find_target(g, memory_bytes);
  fit_ladder_report r;
  r.loop_node = target.loop_node;
  r.loader_node = target.loader_node;
  r.intended_effective_batch = target.effective_batch();
  probe_dir dir;
  prober run_probe{g, target, dir.path};
  auto batch = target.batch;
  auto accumulate = target.accumulate;
  for (;;) {
    r.rungs.push_back(run_probe(batch, accumulate));
    if (on_rung)
      on_rung(r.rungs.back());
    if (r.rungs.back().fits || batch == 1) {
      r.trained = r.rungs.back().fits;
      return r;
    }
    batch = (batch + 1) / 2;
    accumulate = (r.intended_effective_batch + batch - 1) / batch;
  }
}

} // namespace cdui::runtime
