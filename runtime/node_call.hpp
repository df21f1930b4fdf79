#pragma once

#include <any>
#include <memory>
#include <stdexcept>
#include <string>

#include <ATen/core/Generator.h>
#include <nlohmann/json.hpp>

#include "devices/device.hpp"
#include "runtime/engine.hpp"
#include "runtime/graph.hpp"
#include "runtime/value.hpp"

namespace cdui::runtime {

/// A node's failure, in a sentence a user can act on; the engine prefixes which node failed.
class node_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A node ran out of memory; what() is the whole NodeOOMError text (runtime/oom.hpp).
class node_oom_error : public node_error {
public:
  using node_error::node_error;
};

/// What a node sees while it runs: its params and inputs, the run, and the run's event stream.
class node_call {
public:
  node_call(const graph_node& node, const port_values& inputs, const run_context& run,
            at::Generator rng);

  [[nodiscard]] const graph_node& node() const { return node_; }
  [[nodiscard]] const run_context& run() const { return run_; }
  /// The run's random number generator: seeded from the run seed, private to this run.
  [[nodiscard]] at::Generator& rng() { return rng_; }

  [[nodiscard]] bool has_input(const std::string& port) const { return inputs_.count(port) > 0; }

  /// The value on an input port, as the shared_ptr<T> its producer put there.
  template <class T>
  [[nodiscard]] std::shared_ptr<T> input(const std::string& port) const {
    auto i = inputs_.find(port);
    if (i == inputs_.end())
      throw node_error("input '" + port + "' is not connected");
    if (auto* p = std::any_cast<std::shared_ptr<T>>(&i->second))
      return *p;
    throw node_error("input '" + port + "' holds a value of the wrong kind");
  }

  [[nodiscard]] const nlohmann::json& param(const std::string& name) const {
    return node_.params.at(name);
  }
  [[nodiscard]] std::int64_t int_param(const std::string& name) const {
    return param(name).get<std::int64_t>();
  }
  [[nodiscard]] double number_param(const std::string& name) const {
    return param(name).get<double>();
  }
  [[nodiscard]] bool bool_param(const std::string& name) const { return param(name).get<bool>(); }
  [[nodiscard]] std::string string_param(const std::string& name) const {
    return param(name).get<std::string>();
  }

  /// Resolves the node's `device` param: the graph's value (auto: the run's device, when it has
  /// one), else the run's device, else cpu. A fallback is recorded as a run_warning of kind
  /// device_fallback naming this node (in a worker run, the run's cards and the worker's too).
  [[nodiscard]] std::string resolve_device();

  /// Emits an event whose data carries this node's id and type.
  void emit(const std::string& type, nlohmann::json data);
  /// A metric point of a series. Its step counts epochs unless `axis` says what else (an event of
  /// another axis carries "axis": "step" or "batch"; the terminal prints epoch series only).
  void metric(const std::string& name, double value, std::int64_t step, const char* axis = "epoch");
  void warn(const std::string& kind, const std::string& sentence);
  [[nodiscard]] bool stop_requested() const;

  /// The node's final metrics: what the run reports for it when it ends.
  nlohmann::json final_metrics = nlohmann::json::object();

private:
  const graph_node& node_;
  const port_values& inputs_;
  const run_context& run_;
  at::Generator rng_;
};

/// Wraps a value for a port.
template <class T>
[[nodiscard]] value make_value(std::shared_ptr<T> x) {
  return value{std::move(x)};
}

} // namespace cdui::runtime
