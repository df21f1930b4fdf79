#include "runtime/memory_key.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "messages/digest.hpp"
#include "storage/credentials.hpp"

namespace cdui::runtime {

namespace {

/// The first line of the text the key hashes: a change to what the key covers changes it, so an
/// old key never matches a graph it would describe otherwise.
constexpr const char* key_format = "cdui memory key 5";  // 2: TrainingLoop.strategy; 3: Model.freeze, lora;
                                                          // 4: Model.checkpoint_activations;
                                                          // 5: Model.checkpoint_granularity

/// Params that neither shape memory nor pick data, on any node type, a plugin's included: the run's
/// seed, how long it runs, its learning rate, the loader's worker processes, what the editor draws.
const std::set<std::string>& universal_exclusions() {
  static const std::set<std::string> names{"seed",        "epochs", "max_steps", "lr",
                                           "learning_rate", "num_workers", "workers", "label",
                                           "position"};
  return names;
}

/// The params of built-in node types that do not count (every other param of theirs does, a new
/// one included until it is listed here). The table in docs/graph-format.md gives the reasons.
const std::map<std::string, std::set<std::string>>& builtin_exclusions() {
  static const std::map<std::string, std::set<std::string>> names{
    // The values of generated samples, not which samples or their shape.
    {"Dataset", {"noise", "factor", "cluster_std"}},
    // The order of the samples, not their size.
    {"DataLoader", {"shuffle"}},
    // How the weights move: no state of its own.
    {"Optimizer", {"weight_decay"}},
    // The learning rate's schedule: a scheduler holds no tensor.
    {"LRScheduler", {"kind", "step_size", "gamma", "t_max", "eta_min"}},
    // Host threads, reporting, a few scalars for clipping and the loss scale.
    {"TrainingLoop", {"grad_clip_norm", "num_threads", "loss_scale", "progress_interval_ms", "train_loss_batch_every",
                      "checkpoint_every", "checkpoint_every_steps", "keep_checkpoints"}},
    // Where a file is written or read: the architecture is the Model's.
    {"ModelSaver", {"path", "merge_lora"}},
    {"CheckpointSaver", {"path"}},
    {"CheckpointLoader", {"path"}},
  };
  return names;
}

/// A node's type and the params that count, its defaults filled in when its type is known.
std::string own_text(const graph_node& node, const node_registry& registry) {
  auto params = node.params.is_object() ? node.params : nlohmann::json::object();
  if (const auto* spec = registry.find(node.type))
    for (const auto& p : spec->params)
      if (!params.contains(p.name))
        params[p.name] = p.default_value;
  auto kept = nlohmann::json::object();
  for (const auto& [name, value] : params.items())
    if (counts_for_memory(node.type, name))
      kept[name] = value;
  return node.type + ' ' + kept.dump();  // nlohmann's objects are sorted by key
}

/// One label per node that no node id enters: its own text, refined by its neighbours' labels and
/// the ports between them until the refinement splits no more nodes apart (Weisfeiler-Lehman).
std::vector<std::string> structural_labels(const graph& g, const std::vector<std::string>& own,
                                           const std::map<std::string, std::size_t>& index) {
  auto labels = own;
  auto distinct = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return std::unique(v.begin(), v.end()) - v.begin();
  };
  auto before = distinct(labels);
  for (std::size_t round = 0; round < g.nodes.size(); ++round) {
    std::vector<std::vector<std::string>> seen(g.nodes.size());
    for (const auto& e : g.edges) {
      auto from = index.at(e.from.node), to = index.at(e.to.node);
      seen[to].push_back("<" + e.to.port + "=" + labels[from] + "." + e.from.port);
      seen[from].push_back(">" + e.from.port + "=" + labels[to] + "." + e.to.port);
    }
    std::vector<std::string> next(g.nodes.size());
    for (std::size_t i = 0; i < next.size(); ++i) {
      std::sort(seen[i].begin(), seen[i].end());
      auto text = labels[i];
      for (const auto& s : seen[i])
        text += '\n' + s;
      next[i] = fnv1a_hex(text);
    }
    labels = std::move(next);
    auto now = distinct(labels);
    if (now == before)
      break;
    before = now;
  }
  return labels;
}

/// "<node id>.<port>" (the last '.' splits them), as an edge's end is written.
std::optional<port_ref> read_port_ref(const nlohmann::json& v) {
  if (!v.is_string())
    return std::nullopt;
  const auto& text = v.get_ref<const std::string&>();
  auto dot = text.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == text.size())
    return std::nullopt;
  return port_ref{text.substr(0, dot), text.substr(dot + 1)};
}

} // namespace

bool counts_for_memory(const std::string& type, const std::string& param) {
  if (universal_exclusions().count(param))
    return false;
  auto own = builtin_exclusions().find(type);
  return own == builtin_exclusions().end() || !own->second.count(param);
}

std::string memory_key(const graph& g, const node_registry& registry) {
  std::map<std::string, std::size_t> index;
  std::vector<std::string> own;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    index[g.nodes[i].id] = i;
    own.push_back(own_text(g.nodes[i], registry));
  }
  auto labels = structural_labels(g, own, index);
  // Nodes in the order of their labels; equal labels are nodes the wiring cannot tell apart.
  std::vector<std::size_t> order(g.nodes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) {
    return std::tie(labels[a], own[a]) < std::tie(labels[b], own[b]);
  });
  std::vector<std::size_t> canonical(g.nodes.size());
  for (std::size_t k = 0; k < order.size(); ++k)
    canonical[order[k]] = k;
  auto text = std::string{key_format} + '\n';
  for (std::size_t k = 0; k < order.size(); ++k)
    text += "node " + std::to_string(k) + ' ' + own[order[k]] + '\n';
  std::vector<std::string> edges;
  for (const auto& e : g.edges)
    edges.push_back("edge " + std::to_string(canonical[index.at(e.from.node)]) + '.' + e.from.port
                    + " -> " + std::to_string(canonical[index.at(e.to.node)]) + '.' + e.to.port);
  std::sort(edges.begin(), edges.end());
  for (const auto& e : edges)
    text += e + '\n';
  return storage::credential_hash(text);  // SHA-256, in hex
}

std::optional<std::string> memory_key(const nlohmann::json& doc, const node_registry& registry) {
  if (!doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_array())
    return std::nullopt;
  graph g;
  std::set<std::string> ids;
  for (const auto& n : doc["nodes"]) {
    if (!n.is_object() || !n.contains("id") || !n["id"].is_string() || !n.contains("type")
        || !n["type"].is_string())
      return std::nullopt;
    graph_node node;
    node.id = n["id"].get<std::string>();
    node.type = n["type"].get<std::string>();
    if (n.contains("params")) {
      if (!n["params"].is_object())
        return std::nullopt;
      node.params = n["params"];
    }
    if (!ids.insert(node.id).second)
      return std::nullopt;
    g.nodes.push_back(std::move(node));
  }
  if (doc.contains("edges")) {
    if (!doc["edges"].is_array())
      return std::nullopt;
    for (const auto& e : doc["edges"]) {
      if (!e.is_object() || !e.contains("from") || !e.contains("to"))
        return std::nullopt;
      auto from = read_port_ref(e["from"]);
      auto to = read_port_ref(e["to"]);
      if (!from || !to || !ids.count(from->node) || !ids.count(to->node))
        return std::nullopt;
      g.edges.push_back({*from, *to});
    }
  }
  return memory_key(g, registry);
}

} // namespace cdui::runtime
