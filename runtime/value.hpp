#pragma once

#include <any>
#include <map>
#include <string>

namespace cdui::runtime {

/// What travels along an edge. Nodes put shared_ptrs of their own types in it, so passing a dataset
/// or a model to several consumers copies nothing.
using value = std::any;
using port_values = std::map<std::string, value>;

} // namespace cdui::runtime
