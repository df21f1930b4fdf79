#include "actors/server/run_preparation.hpp"

#include <mutex>
#include <random>

#include "actors/policy/placement.hpp"
#include "runtime/memory_key.hpp"
#include "runtime/validate.hpp"

namespace cdui::actors {

namespace {

/// The first node that names a device, for placement.
policy::device_hint hint_of(const runtime::validated_graph& g) {
  for (const auto& node : g.g.nodes)
    if (node.was_given("device"))
      return {node.params["device"].get<std::string>(),
              "node '" + node.id + "' (" + node.type + "), param 'device'"};
  return {};
}

/// The interactive lane's refusal, if the run may not start there now.
std::optional<submit_result> lane_refusal(const run_queue_state& st, const run_request& req) {
  if (req.lane != run_lane::interactive)
    return std::nullopt;
  std::vector<const policy::run_record<caf::actor>*> lane;
  for (const auto& [id, run] : st.runs)
    if (run.lane == run_lane::interactive)
      lane.push_back(&run);
  if (static_cast<int>(lane.size()) >= st.cfg.interactive_limit)
    return refusal("the interactive lane is full: " + std::to_string(lane.size())
                     + " interactive runs are running (at most " + std::to_string(st.cfg.interactive_limit)
                     + ", " + interactive_limit_env + "); queue the run or try again later",
                   true);
  for (const auto* run : lane)
    if (!req.session.empty() && run->session == req.session)
      return refusal("editor session '" + req.session + "' already has an interactive run (" + run->id.str() + ")", true);
  return std::nullopt;
}

} // namespace

namespace {

/// 64 random bits from one generator seeded from std::random_device once: a random_device per
/// draw (a read of the kernel's entropy each) cost a few µs per submit (issue 16's profile).
std::uint64_t random_bits() {
  static std::mt19937_64 gen{std::random_device{}()};
  static std::mutex mutex;
  std::lock_guard lock{mutex};
  return gen();
}

} // namespace

std::string random_id() {
  static const char* hex = "0123456789abcdef";
  std::string id;
  auto bits = random_bits();
  for (int i = 0; i < 8; ++i, bits >>= 4)
    id += hex[bits & 0xf];
  return id;
}

std::string new_run_id(const run_queue_state& st) {
  for (;;)
    if (auto id = random_id(); !st.unrecorded_ids.count(id) && !std::filesystem::exists(st.cfg.home / "runs" / id))
      return id;
}

std::variant<prepared_run, submit_result> prepare_run(run_queue_state& st, const run_request& req,
                                                      bool resuming) {
  auto checked = runtime::validate_graph(std::string_view{req.graph_json});
  if (auto* errors = std::get_if<std::vector<runtime::graph_error>>(&checked))
    return refusal(runtime::to_string(*errors));
  auto graph = std::make_shared<runtime::validated_graph>(
    std::move(std::get<runtime::validated_graph>(checked)));
  auto placed = policy::place(req, hint_of(*graph), st.local, st.workers, resuming, &st.slots);
  if (auto* refused = std::get_if<std::string>(&placed))
    return refusal(*refused);
  auto& where = std::get<policy::placement>(placed);
  if (auto refused = lane_refusal(st, req))
    return *refused;
  prepared_run p;
  p.floating = where.floating;
  p.queue_key = where.queue_key();
  if (where.fallback_warning)
    p.warnings.emplace_back("device_fallback", *where.fallback_warning);
  for (const auto& key : where.keys) {
    p.keys.push_back(key.str());
    if (key.local())
      continue;
    // A set across workers: rank 0's worker executes the run, the others a part of its ranks each.
    p.setup.ranks.push_back(key.str());
    if (p.setup.worker.empty() || p.setup.worker == key.offerer) {
      p.setup.worker = key.offerer;
      p.setup.worker_devices.push_back(key.device);
    } else {
      if (p.setup.parts.empty() || p.setup.parts.back().worker != key.offerer)
        p.setup.parts.push_back({key.offerer, {}, static_cast<int>(p.setup.ranks.size()) - 1});
      p.setup.parts.back().devices.push_back(key.device);
    }
    // A worker's slots admit only while it is connected: an unknown or away one's stay closed.
    auto w = st.workers.find(key.offerer);
    st.slots.set_open(p.keys.back(), w != st.workers.end() && w->second.open);
  }
  p.setup.graph = graph;
  if (req.lane != run_lane::interactive)
    p.memory_key = runtime::memory_key(graph->g);
  auto& ctx = p.setup.context;
  ctx.device = where.run_device;
  if (req.has_seed)
    ctx.seed = req.seed;
  else if (req.lane == run_lane::interactive && !req.session.empty())
    ctx.seed = st.session_seeds.try_emplace(req.session, static_cast<std::uint32_t>(random_bits())).first->second;
  else
    ctx.seed = static_cast<std::uint32_t>(random_bits());
  ctx.num_threads = st.cfg.host.cores_per_run(p.keys.empty() ? "" : p.keys.front());
  ctx.host = st.cfg.host.counts();
  ctx.deterministic = req.deterministic;
  ctx.execution_cache = req.lane == run_lane::interactive && !req.session.empty();
  ctx.weights_persistent = req.weights_persistent;
  ctx.record_outputs = req.record_outputs;
  ctx.memory_budget = req.memory_bytes;
  if (!req.memory_source.empty())
    ctx.memory_budget_source = req.memory_source;
  ctx.resume_from = req.resume_from;
  p.setup.store = st.cfg.store;
  p.setup.stop_deadline_ms = st.cfg.stop_deadline_ms;
  if (!st.cfg.exec_binary.empty() && req.lane != run_lane::interactive) {
    // The stores live in this process's memory; a run that uses them stays beside them.
    if (req.record_outputs || req.weights_persistent)
      p.warnings.emplace_back("isolation_fallback",
                              std::string{"option '"}
                                + (req.record_outputs ? "record_outputs" : "weights_persistent")
                                + "' uses the server's in-memory stores, so this run executes on "
                                  "a thread of the server, not in a process of its own");
    else
      p.setup.exec_binary = st.cfg.exec_binary;
  }
  p.setup.stores = st.cfg.stores;
  p.setup.session = req.session;
  p.setup.graph_json = req.graph_json;
  p.setup.registry = st.registry;
  return p;
}

} // namespace cdui::actors
