#include "runtime/engine.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <set>
#include <optional>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include "devices/memory.hpp"
#include "messages/json_text.hpp"
#include "messages/stop_reason.hpp"
#include "runtime/node_call.hpp"
#include "runtime/node_keys.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/stored_values.hpp"
#include "runtime/tensor_bytes.hpp"

namespace cdui::runtime {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The inputs of node `index`: the outputs its edges point at.
port_values gather_inputs(const validated_graph& graph, std::size_t index,
                          const std::map<std::string, port_values>& outputs) {
  port_values inputs;
  const auto& id = graph.g.nodes[index].id;
  for (const auto& e : graph.g.edges) {
    if (e.to.node != id)
      continue;
    auto from = outputs.find(e.from.node);
    if (from == outputs.end())
      continue;
    if (auto v = from->second.find(e.from.port); v != from->second.end())
      inputs[e.to.port] = v->second;
  }
  return inputs;
}

/// The text of a c10 error without the C++ stack trace libtorch appends.
std::string short_what(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e))
    return c10->what_without_backtrace();
  return e.what();
}

/// Keeps libtorch's deterministic algorithms on while at least one deterministic run executes; the
/// setting is process-wide, so the last run to leave turns it off.
class deterministic_guard {
public:
  deterministic_guard() {
    std::lock_guard lock{mutex()};
    if (count()++ == 0)
      at::globalContext().setDeterministicAlgorithms(true, false);
  }
  ~deterministic_guard() {
    std::lock_guard lock{mutex()};
    if (--count() == 0)
      at::globalContext().setDeterministicAlgorithms(false, false);
  }
  deterministic_guard(const deterministic_guard&) = delete;
  deterministic_guard& operator=(const deterministic_guard&) = delete;

private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static int& count() {
    static int n = 0;
    return n;
  }
};

} // namespace

bool deterministic_algorithms_enabled() {
  return at::globalContext().deterministicAlgorithms();
}

void set_intra_op_threads(int n) {
  // ATen initialises a thread's count lazily, from a process-wide value that a concurrent run may
  // have just set; trigger that first, so the count set here is the one this thread keeps.
  // libtorch 1.13 rebuilds its thread pool on every set_num_threads, even to the same count
  // (9-23 ms of CPU each, docs/benchmarks.md): set it only when it changes.
  n = std::max(1, n);
  if (at::get_num_threads() != n)
    at::set_num_threads(n);
}

namespace {

/// The model a node's outputs carry, if any (a Model node, a TrainingLoop, a CheckpointLoader).
const value* model_output(const port_values& outputs) {
  auto i = outputs.find("model");
  return i == outputs.end() ? nullptr : &i->second;
}

/// weights_persistent: a model node that just ran starts from what it left in the node state store.
void restore_persisted_model(const graph_node& node, port_values& outputs, const run_context& ctx,
                             nlohmann::json& node_metrics) {
  const auto* model = model_output(outputs);
  if (model == nullptr || node.type != "Model")
    return;
  auto stored = ctx.stores->persisted_model(model_state_key(node));
  if (!stored) {
    node_metrics["weights_restored"] = false;
    return;
  }
  auto why_not = restore_weights(*model, *stored);
  node_metrics["weights_restored"] = why_not.empty();
  if (!why_not.empty())
    ctx.emit("run_warning", {{"node", node.id},
                             {"kind", "weights_not_restored"},
                             {"message", "Node " + node.id + " (" + node.type + "): the node state "
                                         "store's weights were not used: " + why_not}});
}

/// weights_persistent, at the end of a run: each Model node's model (trained in place by the
/// loops it fed) goes to the node state store.
/// After node `index` ran out of memory in an editor session: its cache entry and those of the
/// nodes whose model it was given are dropped (docs/http-api.md, "Execution cache"). A loop trains
/// its model in place, so the cached model holds that failed run's gradients and half-made step;
/// the session's next run builds it afresh.
void forget_after_oom(const validated_graph& graph, std::size_t index, const std::vector<std::string>& keys,
                      const std::map<std::string, port_values>& outputs, const run_context& ctx) {
  ctx.stores->forget(keys[index]);
  const auto& id = graph.g.nodes[index].id;
  for (std::size_t from = 0; from < graph.g.nodes.size(); ++from) {
    const auto& producer = graph.g.nodes[from].id;
    bool feeds = std::any_of(graph.g.edges.begin(), graph.g.edges.end(), [&](const auto& e) {
      return e.from.node == producer && e.to.node == id;
    });
    auto out = outputs.find(producer);
    if (feeds && out != outputs.end() && model_output(out->second) != nullptr)
      ctx.stores->forget(keys[from]);
  }
}

void persist_models(const validated_graph& graph, const std::map<std::string, port_values>& outputs,
                    const run_context& ctx) {
  for (const auto& node : graph.g.nodes) {
    auto out = outputs.find(node.id);
    if (node.type != "Model" || out == outputs.end())
      continue;
    if (const auto* model = model_output(out->second)) {
      tensor_bytes_counter counter;
      counter.add_value(*model);
      ctx.stores->persist_model(model_state_key(node), *model, counter.bytes());
    }
  }
}

void record_all(std::map<std::string, port_values> outputs, const run_context& ctx) {
  if (outputs.empty())
    return;
  tensor_bytes_counter counter;  // one counter: a tensor two nodes pass along counts once
  for (const auto& [node, values] : outputs)
    counter.add_values(values);
  ctx.stores->record(std::move(outputs), counter.bytes());
}

} // namespace

namespace {

std::vector<std::string> ddp_loops(const validated_graph& graph) {
  std::vector<std::string> loops;
  for (auto index : graph.order) {
    const auto& node = graph.g.nodes[index];
    if (node.type == "TrainingLoop" && node.params.value("strategy", std::string{}) == "ddp")
      loops.push_back(node.id);
  }
  return loops;
}

/// `ids` and every node that feeds them, walking back from the end of the order (inputs come first).
std::set<std::string> with_ancestors(const validated_graph& graph, std::set<std::string> ids) {
  for (auto i = graph.order.rbegin(); i != graph.order.rend(); ++i) {
    const auto& id = graph.g.nodes[*i].id;
    if (!ids.count(id))
      continue;
    for (const auto& e : graph.g.edges)
      if (e.to.node == id)
        ids.insert(e.from.node);
  }
  return ids;
}

} // namespace

std::optional<std::string> ddp_conflict(const validated_graph& graph) {
  auto loops = ddp_loops(graph);
  // In execution order: each loop must be fed by the one before it, or they run side by side.
  for (std::size_t i = 1; i < loops.size(); ++i)
    if (!with_ancestors(graph, {loops[i]}).count(loops[i - 1]))
      return "TrainingLoops '" + loops[i - 1] + "' and '" + loops[i] + "' both train with strategy ddp "
             "on separate branches of the graph; the ranks train one ddp loop at a time: feed one "
             "loop's model into the other, or set one to strategy single";
  return std::nullopt;
}

validated_graph ddp_rank_part(const validated_graph& graph) {
  auto loops = ddp_loops(graph);
  auto needed = with_ancestors(graph, {loops.begin(), loops.end()});
  auto part = graph;
  part.order.clear();
  for (auto index : graph.order)
    if (needed.count(graph.g.nodes[index].id))
      part.order.push_back(index);
  return part;
}

run_outcome execute(const validated_graph& graph, const run_context& ctx) {
  auto started = std::chrono::steady_clock::now();
  std::optional<deterministic_guard> deterministic;
  if (ctx.deterministic)
    deterministic.emplace();
  devices::install_counting_allocator();
  auto rng = at::make_generator<at::CPUGeneratorImpl>(ctx.seed);
  set_intra_op_threads(ctx.num_threads);
  bool caching = ctx.stores && ctx.execution_cache;
  bool persisting = ctx.stores && ctx.weights_persistent;
  ctx.emit("execution_start", {{"run_id", ctx.run_id},
                               {"seed", ctx.seed},
                               {"device", !ctx.slot.empty()     ? ctx.slot
                                          : ctx.device.empty() ? "cpu"
                                                               : ctx.device},
                               {"num_threads", ctx.num_threads},
                               {"deterministic", ctx.deterministic},
                               {"execution_cache", caching},
                               {"weights_persistent", persisting},
                               {"record_outputs", ctx.stores && ctx.record_outputs},
                               {"nodes", graph.g.nodes.size()}});
  auto stopped = [&] { return ctx.stop && ctx.stop->load(); };
  auto keys = caching ? node_keys(graph, ctx.device, ctx.seed) : std::vector<std::string>{};
  std::map<std::string, port_values> outputs;
  nlohmann::json final_metrics = nlohmann::json::object();
  run_outcome outcome;
  // Whatever ran is recorded, a failed or stopped run's nodes too: that is when a person looks.
  auto record = [&] {
    if (ctx.stores && ctx.record_outputs)
      record_all(std::move(outputs), ctx);
  };
  for (auto index : graph.order) {
    const auto& node = graph.g.nodes[index];
    if (stopped())
      break;
    if (caching) {
      if (auto hit = ctx.stores->cached(keys[index])) {
        outputs[node.id] = std::move(hit->outputs);
        if (!hit->final_metrics.empty())
          final_metrics[node.id] = std::move(hit->final_metrics);
        ctx.emit("node_status", {{"node", node.id}, {"type", node.type}, {"status", "cached"}});
        continue;
      }
    }
    auto node_started = std::chrono::steady_clock::now();
    ctx.emit("node_status", {{"node", node.id}, {"type", node.type}, {"status", "running"}});
    auto inputs = gather_inputs(graph, index, outputs);
    node_call call{node, inputs, ctx, rng};
    try {
      const auto& spec = *graph.specs[index];
      outputs[node.id] = spec.run ? spec.run(call) : nodes::builtin_run(spec.type)(call);
      if (persisting)
        restore_persisted_model(node, outputs[node.id], ctx, call.final_metrics);
    } catch (const std::exception& e) {
      // A node that fails once the run was asked to stop (a read cut short, say) ends it
      // cancelled or interrupted, as asked: a cancelled run is never reported failed.
      if (stopped()) {
        ctx.emit("node_status", {{"node", node.id},
                                 {"type", node.type},
                                 {"status", "stopped"},
                                 {"seconds", seconds_since(node_started)}});
        break;
      }
      outcome.status = run_status::failed;
      outcome.final_metrics = json_text(final_metrics);
      bool oom = dynamic_cast<const node_oom_error*>(&e) != nullptr;
      outcome.error = oom ? std::string{e.what()}
                          : "Node " + node.type + " (" + node.id + ") failed: " + short_what(e);
      ctx.emit("node_status", {{"node", node.id},
                               {"type", node.type},
                               {"status", "failed"},
                               {"seconds", seconds_since(node_started)}});
      ctx.emit("execution_error", {{"node", node.id},
                                   {"kind", oom ? "out_of_memory" : "error"},
                                   {"error", outcome.error}});
      if (oom && caching)
        forget_after_oom(graph, index, keys, outputs, ctx);
      record();
      return outcome;
    }
    if (!call.final_metrics.empty())
      final_metrics[node.id] = call.final_metrics;
    bool node_stopped = stopped();
    ctx.emit("node_status", {{"node", node.id},
                             {"type", node.type},
                             {"status", node_stopped ? "stopped" : "completed"},
                             {"seconds", seconds_since(node_started)}});
    // Only a node that ran to its end is worth reusing.
    if (caching && !node_stopped) {
      tensor_bytes_counter counter;
      counter.add_values(outputs[node.id]);
      ctx.stores->cache(keys[index], {outputs[node.id], call.final_metrics}, counter.bytes());
    }
  }
  outcome.final_metrics = json_text(final_metrics);
  if (persisting)
    persist_models(graph, outputs, ctx);
  record();
  if (stopped()) {
    bool interrupted = ctx.interrupt && ctx.interrupt->load();
    outcome.status = interrupted ? run_status::interrupted : run_status::cancelled;
    auto data = interrupted ? stopped_data(stop_reason::interrupted, "the server stopped")
                            : stopped_data(stop_reason::cancelled, "cancelled while it was running");
    data["metrics"] = final_metrics;
    ctx.emit("execution_stopped", data);
    return outcome;
  }
  ctx.emit("execution_complete",
           {{"seconds", seconds_since(started)}, {"metrics", final_metrics}});
  return outcome;
}

node_call::node_call(const graph_node& node, const port_values& inputs, const run_context& run,
                     at::Generator rng)
  : node_(node), inputs_(inputs), run_(run), rng_(std::move(rng)) {}

std::string node_call::resolve_device() {
  std::string text = run_.device.empty() ? "cpu" : run_.device;
  // auto follows the run's device, its first card, not this machine's first accelerator.
  if (node_.was_given("device") && (string_param("device") != "auto" || run_.device.empty()))
    text = string_param("device");
  auto parsed = devices::parse_device(text);
  if (auto* err = std::get_if<devices::device_parse_error>(&parsed))
    throw node_error("param 'device': " + err->message);
  auto resolved = devices::resolve_device(std::get<devices::device_spec>(parsed), run_.host);
  auto who = "Node " + node_.id + " (" + node_.type + ")";
  if (resolved.fallback_warning && !run_.device_aliases.empty())
    warn("device_fallback",
         who + " " + devices::worker_run_fallback(text, run_.device_aliases, resolved.name));
  else if (resolved.fallback_warning)
    warn("device_fallback", who + ": " + *resolved.fallback_warning);
  return resolved.name;
}

void node_call::emit(const std::string& type, nlohmann::json data) {
  data["node"] = node_.id;
  run_.emit(type, data);
}

void node_call::metric(const std::string& name, double value, std::int64_t step, const char* axis) {
  nlohmann::json data{{"name", name}, {"value", value}, {"step", step}};
  if (std::string_view{axis} != "epoch")
    data["axis"] = axis;
  emit("metric", std::move(data));
}

void node_call::warn(const std::string& kind, const std::string& sentence) {
  emit("run_warning", {{"kind", kind}, {"message", sentence}});
}

bool node_call::stop_requested() const {
  return run_.stop && run_.stop->load(std::memory_order_relaxed);
}

} // namespace cdui::runtime
