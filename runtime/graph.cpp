#include "runtime/graph.hpp"

#include <algorithm>

#include "runtime/node_spec.hpp"

namespace cdui::runtime {

std::string to_string(const std::vector<graph_error>& errors) {
  std::string text;
  for (const auto& e : errors) {
    if (!text.empty())
      text += '\n';
    text += e.message;
  }
  return text;
}

bool graph_node::was_given(const std::string& param) const {
  return std::find(given.begin(), given.end(), param) != given.end();
}

const param_spec* node_spec::param(const std::string& name) const {
  for (const auto& p : params)
    if (p.name == name)
      return &p;
  return nullptr;
}

const port_spec* node_spec::input(const std::string& name) const {
  for (const auto& p : inputs)
    if (p.name == name)
      return &p;
  return nullptr;
}

const port_spec* node_spec::output(const std::string& name) const {
  for (const auto& p : outputs)
    if (p.name == name)
      return &p;
  return nullptr;
}

void node_registry::add(node_spec spec) {
  auto type = spec.type;
  specs_.insert_or_assign(std::move(type), std::move(spec));
}

const node_spec* node_registry::find(const std::string& type) const {
  auto i = specs_.find(type);
  return i == specs_.end() ? nullptr : &i->second;
}

} // namespace cdui::runtime
