#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/value.hpp"

namespace cdui::runtime {

/// A node's outputs as the execution cache keeps them, with the final metrics the node reported.
struct cached_node {
  port_values outputs;
  nlohmann::json final_metrics = nlohmann::json::object();
};

/// The server's in-memory stores as one run sees them (docs/http-api.md, "The in-memory stores").
/// The engine calls them on the run's executor thread; implementations are thread-safe. `bytes` is
/// what the value holds in tensor storage (runtime/tensor_bytes.hpp), each storage once.
class run_stores {
public:
  virtual ~run_stores() = default;

  /// Execution cache of the run's editor session: a node's outputs from an earlier run.
  [[nodiscard]] virtual std::optional<cached_node> cached(const std::string& node_key) = 0;
  virtual void cache(const std::string& node_key, cached_node node, std::int64_t bytes) = 0;
  /// Drops a node's entry from the execution cache (after an out-of-memory error, so that the next
  /// run starts from a clean card: docs/http-api.md, "Execution cache").
  virtual void forget(const std::string& node_key) = 0;

  /// Node state store: the model a node left behind in an earlier weights_persistent run.
  [[nodiscard]] virtual std::optional<value> persisted_model(const std::string& state_key) = 0;
  virtual void persist_model(const std::string& state_key, value model, std::int64_t bytes) = 0;

  /// Run output store: every node's outputs, by node id, once the run has ended.
  virtual void record(std::map<std::string, port_values> outputs, std::int64_t bytes) = 0;
};

} // namespace cdui::runtime
