#include "runtime/fit.hpp"

#include <filesystem>
#include <random>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/engine.hpp"

namespace cdui::runtime {

namespace {

/// The graph cut down to one probe: the loop and what feeds it, the loader at `batch`, one
/// optimizer step without accumulation, on sim:0.
nlohmann::json probe_graph(const validated_graph& g, const std::string& loop,
                           const std::string& loader, std::int64_t batch) {
  std::set<std::string> keep{loop};
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& e : g.g.edges)
      if (keep.count(e.to.node) && keep.insert(e.from.node).second)
        grew = true;
  }
  nlohmann::json doc{{"nodes", nlohmann::json::array()}, {"edges", nlohmann::json::array()}};
  for (const auto& n : g.g.nodes) {
    if (!keep.count(n.id))
      continue;
    auto params = n.params;
    if (n.id == loader)
      params["batch_size"] = batch;
    if (n.id == loop) {
      params["max_steps"] = 1;
      params["epochs"] = 1;
      params["accumulate_steps"] = 1;
      params["device"] = "sim:0";
    }
    doc["nodes"].push_back({{"id", n.id}, {"type", n.type}, {"params", params}});
  }
  for (const auto& e : g.g.edges)
    if (keep.count(e.to.node))
      doc["edges"].push_back({{"from", e.from.node + "." + e.from.port},
                              {"to", e.to.node + "." + e.to.port}});
  return doc;
}

fit_probe run_probe(const validated_graph& g, const fit_report& r, std::int64_t batch,
                    const std::filesystem::path& dir) {
  auto checked = validate_graph(probe_graph(g, r.loop_node, r.loader_node, batch));
  if (auto* errors = std::get_if<std::vector<graph_error>>(&checked))
    throw std::invalid_argument(to_string(*errors));
  run_context ctx;
  ctx.run_id = "fit";
  ctx.run_dir = dir;
  ctx.seed = 0;
  ctx.num_threads = 1;
  ctx.host.sim_count = 1;
  ctx.host.sim_total_bytes = {r.memory_bytes};
  ctx.emit = [](const std::string&, const nlohmann::json&) {};
  auto outcome = execute(std::get<validated_graph>(checked), ctx);
  fit_probe probe{batch, outcome.status == run_status::succeeded, 0};
  if (probe.fits) {
    auto metrics = nlohmann::json::parse(outcome.final_metrics);
    probe.peak_bytes = metrics[r.loop_node]["peak_memory_bytes"]["sim:0"].get<std::int64_t>();
  } else if (outcome.error.find("ran out of memory") == std::string::npos) {
    throw std::invalid_argument("a probe at batch_size " + std::to_string(batch)
                                + " failed for another reason than memory: " + outcome.error);
  }
  return probe;
}

/// batch_size x accumulate_steps == intended with the fewest accumulate_steps whose batch fits;
/// when no divisor fits, the closest effective batch from above.
void suggest(fit_report& r) {
  if (r.largest_batch == 0)
    return;
  auto e = r.intended_effective_batch;
  for (std::int64_t n = 1; n <= e; ++n) {
    if (e % n == 0 && e / n <= r.largest_batch) {
      r.suggested_batch = e / n;
      r.suggested_accumulate = n;
      return;
    }
  }
  r.exact = false;
  r.suggested_accumulate = (e + r.largest_batch - 1) / r.largest_batch;
  r.suggested_batch = (e + r.suggested_accumulate - 1) / r.suggested_accumulate;
}

} // namespace

fit_report fit_batch_size(const validated_graph& g, std::int64_t memory_bytes,
                          const std::function<void(const fit_probe&)>& on_probe) {
  fit_report r;
  r.memory_bytes = memory_bytes;
  std::int64_t accumulate = 1, batch = 0;
  for (const auto& n : g.g.nodes)
    if (n.type == "TrainingLoop" && r.loop_node.empty()) {
      r.loop_node = n.id;
      accumulate = n.params["accumulate_steps"].get<std::int64_t>();
    }
  if (r.loop_node.empty())
    throw std::invalid_argument("the graph has no TrainingLoop to fit");
  for (const auto& e : g.g.edges)
    if (e.to.node == r.loop_node && e.to.port == "dataloader")
      r.loader_node = e.from.node;
  for (const auto& n : g.g.nodes)
    if (n.id == r.loader_node)
      batch = n.params["batch_size"].get<std::int64_t>();
  if (r.loader_node.empty() || batch == 0)
    throw std::invalid_argument("TrainingLoop " + r.loop_node + " is not fed by a DataLoader");
  r.intended_effective_batch = batch * accumulate;

  auto dir = std::filesystem::temp_directory_path()
             / ("cdui-fit-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  auto probe = [&](std::int64_t b) {
    auto p = run_probe(g, r, b, dir);
    r.probes.push_back(p);
    if (on_probe)
      on_probe(p);
    return p.fits;
  };
  try {
    // Doubling finds a bracket [fits, fails); no need to go past the effective batch the graph
    // wants, since a larger micro-batch than that is never what the user asked for.
    std::int64_t good = 0, bad = 0;
    for (std::int64_t b = 1;; b *= 2) {
      auto capped = std::min(b, r.intended_effective_batch);
      if (probe(capped)) {
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
      (probe(mid) ? good : bad) = mid;
    }
    r.largest_batch = good;
  } catch (...) {
    std::filesystem::remove_all(dir);
    throw;
  }
  std::filesystem::remove_all(dir);
  suggest(r);
  return r;
}

} // namespace cdui::runtime
