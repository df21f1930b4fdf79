#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/run_stores.hpp"
#include "runtime/value.hpp"

namespace cdui::runtime {

/// What a port value is, for a person reading recorded outputs (GET /api/runs/{id}/outputs): its
/// kind and the figures that describe it (a dataset's samples and sample shape, a model's
/// parameters and shapes, a metrics object itself), with the bytes of tensor storage it holds.
[[nodiscard]] nlohmann::json describe_value(const value& v);

/// Every port of a node's outputs, described.
[[nodiscard]] nlohmann::json describe_values(const port_values& values);

/// Copies the weights of `stored` (a model value a node left in the node state store) into
/// `fresh` (the model the node just built), parameter by parameter and buffer by buffer. Returns
/// an empty string when it did, else why not (different layers or shapes), changing nothing.
[[nodiscard]] std::string restore_weights(const value& fresh, const value& stored);

/// The stores of a run in a process of its own (a worker run's `cdui exec`): none of the server's
/// in-memory stores, and record() writes the outputs, described, to `file` as JSON
/// {node: {port: {...}}} (the shape GET /api/runs/{id}/outputs gives), where the agent reads them.
[[nodiscard]] std::shared_ptr<run_stores> outputs_file(std::filesystem::path file);

} // namespace cdui::runtime
