#include "runtime/engine.hpp"

#include <chrono>
#include <exception>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include "devices/memory.hpp"
#include "runtime/node_call.hpp"

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

} // namespace

void set_intra_op_threads(int n) {
  // ATen initialises a thread's count lazily, from a process-wide value that a concurrent run may
  // have just set; trigger that first, so the count set here is the one this thread keeps.
  (void)at::get_num_threads();
  at::set_num_threads(std::max(1, n));
}

run_outcome execute(const validated_graph& graph, const run_context& ctx) {
  auto started = std::chrono::steady_clock::now();
  devices::install_counting_allocator();
  auto rng = at::make_generator<at::CPUGeneratorImpl>(ctx.seed);
  set_intra_op_threads(ctx.num_threads);
  ctx.emit("execution_start", {{"run_id", ctx.run_id},
                               {"seed", ctx.seed},
                               {"device", ctx.device.empty() ? "cpu" : ctx.device},
                               {"num_threads", ctx.num_threads},
                               {"nodes", graph.g.nodes.size()}});
  auto stopped = [&] { return ctx.stop && ctx.stop->load(); };
  std::map<std::string, port_values> outputs;
  nlohmann::json final_metrics = nlohmann::json::object();
  run_outcome outcome;
  for (auto index : graph.order) {
    const auto& node = graph.g.nodes[index];
    if (stopped())
      break;
    auto node_started = std::chrono::steady_clock::now();
    ctx.emit("node_status", {{"node", node.id}, {"type", node.type}, {"status", "running"}});
    auto inputs = gather_inputs(graph, index, outputs);
    node_call call{node, inputs, ctx, rng};
    try {
      outputs[node.id] = graph.specs[index]->run(call);
    } catch (const std::exception& e) {
      outcome.status = run_status::failed;
      outcome.final_metrics = final_metrics.dump();
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
      return outcome;
    }
    if (!call.final_metrics.empty())
      final_metrics[node.id] = call.final_metrics;
    ctx.emit("node_status", {{"node", node.id},
                             {"type", node.type},
                             {"status", stopped() ? "stopped" : "completed"},
                             {"seconds", seconds_since(node_started)}});
  }
  outcome.final_metrics = final_metrics.dump();
  if (stopped()) {
    outcome.status = run_status::cancelled;
    ctx.emit("execution_stopped", {{"reason", "cancelled"}, {"metrics", final_metrics}});
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
  std::string text = "cpu";
  if (node_.was_given("device"))
    text = string_param("device");
  else if (!run_.device.empty())
    text = run_.device;
  auto parsed = devices::parse_device(text);
  if (auto* err = std::get_if<devices::device_parse_error>(&parsed))
    throw node_error("param 'device': " + err->message);
  auto resolved = devices::resolve_device(std::get<devices::device_spec>(parsed), run_.host);
  if (resolved.fallback_warning)
    warn("device_fallback", "Node " + node_.id + " (" + node_.type + "): "
                              + *resolved.fallback_warning);
  return resolved.name;
}

void node_call::emit(const std::string& type, nlohmann::json data) {
  data["node"] = node_.id;
  run_.emit(type, data);
}

void node_call::metric(const std::string& name, double value, std::int64_t step) {
  emit("metric", {{"name", name}, {"value", value}, {"step", step}});
}

void node_call::warn(const std::string& kind, const std::string& sentence) {
  emit("run_warning", {{"kind", kind}, {"message", sentence}});
}

bool node_call::stop_requested() const {
  return run_.stop && run_.stop->load(std::memory_order_relaxed);
}

} // namespace cdui::runtime
