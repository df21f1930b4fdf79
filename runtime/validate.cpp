#include "runtime/validate.hpp"

#include "devices/device.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

namespace cdui::runtime {

namespace {

/// Builds "node 'id' (Type)" or "node 'id'" for messages.
std::string node_label(const std::string& id, const std::string& type) {
  return type.empty() ? "node '" + id + "'" : "node '" + id + "' (" + type + ")";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ", ") + item;
  return out;
}

template <class Items, class Name>
std::string list_names(const Items& items, Name name) {
  std::vector<std::string> names;
  for (const auto& item : items)
    names.push_back(name(item));
  return names.empty() ? "none" : join(names);
}

std::string format_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

/// Checks one param value against its spec; returns the problem, or an empty string.
std::string check_param(const param_spec& spec, const nlohmann::json& v) {
  switch (spec.kind) {
    case param_kind::integer:
      if (!v.is_number_integer())
        return "must be an integer, got " + v.dump();
      if (v.is_number_unsigned()
          && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
        return "is out of range (at most " + std::to_string(INT64_MAX) + "), got " + v.dump();
      break;
    case param_kind::number:
      if (!v.is_number())
        return "must be a number, got " + v.dump();
      break;
    case param_kind::boolean:
      return v.is_boolean() ? "" : "must be true or false, got " + v.dump();
    case param_kind::string:
      return v.is_string() ? "" : "must be a string, got " + v.dump();
    case param_kind::choice:
      if (!v.is_string()
          || std::find(spec.choices.begin(), spec.choices.end(), v.get<std::string>())
               == spec.choices.end())
        return "must be one of " + join(spec.choices) + ", got " + v.dump();
      return "";
    case param_kind::list:
      return v.is_array() ? "" : "must be a list, got " + v.dump();
    case param_kind::object:
      return v.is_object() ? "" : "must be an object, got " + v.dump();
    case param_kind::scalar:
      if (v.is_string())
        return "";
      if (!v.is_number())
        return "must be a string or a number, got " + v.dump();
      break;
  }
  auto x = v.get<double>();
  if (x < spec.min || x > spec.max) {
    if (std::isinf(spec.max))
      return "must be >= " + format_number(spec.min) + ", got " + v.dump();
    if (std::isinf(spec.min))
      return "must be <= " + format_number(spec.max) + ", got " + v.dump();
    return "must be between " + format_number(spec.min) + " and " + format_number(spec.max)
           + ", got " + v.dump();
  }
  return "";
}

std::optional<port_ref> parse_port_ref(const nlohmann::json& v) {
  if (!v.is_string())
    return std::nullopt;
  auto text = v.get<std::string>();
  auto dot = text.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == text.size())
    return std::nullopt;
  return port_ref{text.substr(0, dot), text.substr(dot + 1)};
}

class validator {
public:
  validator(const nlohmann::json& doc, const node_registry& registry)
    : doc_(doc), registry_(registry) {}

  validation_result run() {
    read_nodes();
    if (!errors_.empty())
      return errors_;
    // Params and edges are checked together so one pass reports every mistake of both kinds.
    check_params();
    read_edges();
    check_required_inputs();
    if (!errors_.empty())
      return errors_;
    order_nodes();
    if (!errors_.empty())
      return errors_;
    return std::move(result_);
  }

private:
  void fail(std::string node, std::string field, std::string message) {
    errors_.push_back({std::move(node), std::move(field), std::move(message)});
  }

  void read_nodes() {
    if (!doc_.is_object()) {
      fail("", "", "the graph must be a JSON object with \"nodes\" and \"edges\"");
      return;
    }
    auto nodes = doc_.find("nodes");
    if (nodes == doc_.end() || !nodes->is_array()) {
      fail("", "nodes", "the graph has no \"nodes\" list");
      return;
    }
    if (nodes->empty()) {
      fail("", "nodes", "the graph is empty: \"nodes\" has no node");
      return;
    }
    static const std::set<std::string> node_fields{"id", "type", "params", "position", "label"};
    for (std::size_t i = 0; i < nodes->size(); ++i) {
      const auto& n = (*nodes)[i];
      auto where = "nodes[" + std::to_string(i) + "]";
      if (!n.is_object()) {
        fail("", where, where + " must be an object with \"id\", \"type\" and \"params\"");
        continue;
      }
      auto id = n.find("id");
      if (id == n.end() || !id->is_string() || id->get<std::string>().empty()) {
        fail("", where, where + " has no \"id\" (a non-empty string)");
        continue;
      }
      graph_node node;
      node.id = id->get<std::string>();
      if (index_.count(node.id)) {
        fail(node.id, "id", "node id '" + node.id + "' is used by more than one node");
        continue;
      }
      for (const auto& [key, unused] : n.items())
        if (!node_fields.count(key))
          fail(node.id, key, "node '" + node.id + "': unknown field \"" + key
                               + "\" (a node has id, type, params, position and label)");
      auto type = n.find("type");
      if (type == n.end() || !type->is_string()) {
        fail(node.id, "type", "node '" + node.id + "' has no \"type\"");
        continue;
      }
      node.type = type->get<std::string>();
      const auto* spec = registry_.find(node.type);
      if (spec == nullptr) {
        fail(node.id, "type", node_label(node.id, "") + ": unknown node type '" + node.type
                                + "' (known types: "
                                + list_names(registry_.all(), [](auto& kv) { return kv.first; })
                                + ")");
        continue;
      }
      if (auto params = n.find("params"); params != n.end()) {
        if (!params->is_object()) {
          fail(node.id, "params", node_label(node.id, node.type) + ": \"params\" must be an object");
          continue;
        }
        node.params = *params;
      }
      index_[node.id] = result_.g.nodes.size();
      result_.g.nodes.push_back(std::move(node));
      result_.specs.push_back(spec);
    }
  }

  void check_params() {
    for (std::size_t i = 0; i < result_.g.nodes.size(); ++i) {
      auto& node = result_.g.nodes[i];
      const auto& spec = *result_.specs[i];
      auto label = node_label(node.id, node.type);
      bool ok = true;
      for (const auto& [name, v] : node.params.items()) {
        node.given.push_back(name);
        const auto* p = spec.param(name);
        if (p == nullptr) {
          fail(node.id, name, label + ": unknown param '" + name + "' (" + node.type + " takes "
                                + list_names(spec.params, [](auto& q) { return q.name; }) + ")");
          ok = false;
        } else if (auto problem = check_param(*p, v); !problem.empty()) {
          fail(node.id, name, label + ": param '" + name + "' " + problem);
          ok = false;
        } else if (name == "device") {
          auto parsed = devices::parse_device(v.get<std::string>());
          if (auto* err = std::get_if<devices::device_parse_error>(&parsed)) {
            fail(node.id, name, label + ": param 'device': " + err->message);
            ok = false;
          }
        }
      }
      for (const auto& p : spec.params) {
        if (node.params.contains(p.name))
          continue;
        if (p.required()) {
          fail(node.id, p.name, label + ": missing param '" + p.name + "'");
          ok = false;
        } else {
          node.params[p.name] = p.default_value;
        }
      }
      if (ok && spec.check)
        for (auto& e : spec.check(node))
          errors_.push_back(std::move(e));
    }
  }

  void read_edges() {
    auto edges = doc_.find("edges");
    if (edges == doc_.end())
      return;
    if (!edges->is_array()) {
      fail("", "edges", "\"edges\" must be a list");
      return;
    }
    for (std::size_t i = 0; i < edges->size(); ++i) {
      const auto& e = (*edges)[i];
      auto where = "edges[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("from") || !e.contains("to")) {
        fail("", where, where + " must be an object with \"from\" and \"to\"");
        continue;
      }
      auto from = parse_port_ref(e["from"]);
      auto to = parse_port_ref(e["to"]);
      if (!from || !to) {
        fail("", where, where + ": \"from\" and \"to\" must read \"<node id>.<port>\", got "
                          + e["from"].dump() + " -> " + e["to"].dump());
        continue;
      }
      // An input an edge aims at counts as connected even when the edge is refused below, so
      // the refusal is its only error.
      targeted_.insert({to->node, to->port});
      const auto* out = find_port(*from, where, true);
      const auto* in = find_port(*to, where, false);
      if (out == nullptr || in == nullptr)
        continue;
      auto arrow = from->node + "." + from->port + " -> " + to->node + "." + to->port;
      if (out->type != in->type) {
        fail(to->node, to->port, where + " (" + arrow + "): port type mismatch, " + from->node
                                   + "." + from->port + " gives " + out->type + " but "
                                   + to->node + "." + to->port + " takes " + in->type);
        continue;
      }
      if (!wired_.insert({to->node, to->port}).second) {
        fail(to->node, to->port, where + " (" + arrow + "): input " + to->node + "." + to->port
                                   + " is already connected; an input takes one edge");
        continue;
      }
      result_.g.edges.push_back({*from, *to});
    }
  }

  const port_spec* find_port(const port_ref& ref, const std::string& where, bool output) {
    auto i = index_.find(ref.node);
    if (i == index_.end()) {
      fail(ref.node, "", where + ": no node has the id '" + ref.node + "'");
      return nullptr;
    }
    const auto& spec = *result_.specs[i->second];
    const auto* port = output ? spec.output(ref.port) : spec.input(ref.port);
    if (port == nullptr) {
      const auto& ports = output ? spec.outputs : spec.inputs;
      fail(ref.node, ref.port, where + ": " + node_label(ref.node, spec.type) + " has no "
                                 + (output ? "output" : "input") + " port '" + ref.port
                                 + "' (its " + (output ? "outputs" : "inputs") + ": "
                                 + list_names(ports, [](auto& p) { return p.name; }) + ")");
    }
    return port;
  }

  void check_required_inputs() {
    const auto& connected = targeted_;
    for (std::size_t i = 0; i < result_.g.nodes.size(); ++i) {
      const auto& node = result_.g.nodes[i];
      for (const auto& port : result_.specs[i]->inputs) {
        bool stood_in = !port.unless_param.empty() && !node.params[port.unless_param].empty();
        if (port.required && !stood_in && !connected.count({node.id, port.name}))
          fail(node.id, port.name, node_label(node.id, node.type) + ": required input '" + port.name + "' ("
                                     + port.type + ") is not connected"
                                     + (port.unless_param.empty() ? "" : ", and param '" + port.unless_param
                                                                          + "' is not set in its place"));
      }
    }
  }

  /// Kahn's algorithm, taking ready nodes in the order they are written so execution order is
  /// stable; what is left over lies on a cycle.
  void order_nodes() {
    auto n = result_.g.nodes.size();
    std::vector<std::vector<std::size_t>> next(n);
    std::vector<std::size_t> indegree(n, 0);
    for (const auto& e : result_.g.edges) {
      auto a = index_[e.from.node];
      auto b = index_[e.to.node];
      next[a].push_back(b);
      ++indegree[b];
    }
    std::set<std::size_t> ready;
    for (std::size_t i = 0; i < n; ++i)
      if (indegree[i] == 0)
        ready.insert(i);
    while (!ready.empty()) {
      auto i = *ready.begin();
      ready.erase(ready.begin());
      result_.order.push_back(i);
      for (auto j : next[i])
        if (--indegree[j] == 0)
          ready.insert(j);
    }
    if (result_.order.size() == n)
      return;
    // What is left holds the cycles and what hangs below them; peel off nodes with no successor
    // left until only nodes on a cycle remain.
    std::vector<bool> left(n);
    for (std::size_t i = 0; i < n; ++i)
      left[i] = indegree[i] > 0;
    for (bool peeled = true; peeled;) {
      peeled = false;
      for (std::size_t i = 0; i < n; ++i) {
        if (left[i] && std::none_of(next[i].begin(), next[i].end(), [&](auto j) { return left[j]; })) {
          left[i] = false;
          peeled = true;
        }
      }
    }
    std::vector<std::string> cycle;
    for (std::size_t i = 0; i < n; ++i)
      if (left[i])
        cycle.push_back(result_.g.nodes[i].id);
    fail(cycle.front(), "", "the graph has a cycle through nodes " + join(cycle)
                              + "; a graph must flow one way");
  }

  const nlohmann::json& doc_;
  const node_registry& registry_;
  validated_graph result_;
  std::map<std::string, std::size_t> index_;
  std::vector<graph_error> errors_;
  std::set<std::pair<std::string, std::string>> targeted_;  // inputs some edge aims at
  std::set<std::pair<std::string, std::string>> wired_;     // inputs an accepted edge feeds
};

} // namespace

validation_result validate_graph(const nlohmann::json& doc, const node_registry& registry) {
  return validator{doc, registry}.run();
}

} // namespace cdui::runtime
