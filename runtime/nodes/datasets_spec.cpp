// The Dataset node spec: params, ports and checks, torch-free (runtime/nodes/datasets.cpp runs it).
#include <cmath>
#include <set>

#include "runtime/file_access.hpp"
#include "runtime/nodes/builtin.hpp"

namespace cdui::runtime::nodes {

namespace {

std::vector<graph_error> check_dataset(const graph_node& node) {
  std::vector<graph_error> errors;
  auto refuse_path = [&](const std::string& param) {
    auto refusal = refusal_by_text(file_use::data, param, node.params[param].get<std::string>());
    if (!refusal.empty())
      errors.push_back({node.id, param, "node '" + node.id + "' (Dataset): " + refusal});
  };
  if (node.params["name"] == "csv" && node.params["path"].get<std::string>().empty())
    errors.push_back({node.id, "path",
                      "node '" + node.id + "' (Dataset): param 'path' is required when name is csv"});
  else if (node.params["name"] == "csv")
    refuse_path("path");
  if (node.params["name"] == "fashion_mnist")
    refuse_path("root");
  const auto& classes = node.params["classes"];
  std::set<std::string> seen;
  for (const auto& c : classes)
    if (!c.is_string() || !seen.insert(c.get<std::string>()).second) {
      errors.push_back({node.id, "classes", "node '" + node.id + "' (Dataset): param 'classes' "
                                            "must list distinct strings, got " + classes.dump()});
      break;
    }
  return errors;
}

} // namespace

void register_dataset_nodes(node_registry& registry) {
  using nlohmann::json;
  node_spec spec;
  spec.type = "Dataset";
  spec.help = "A dataset held in memory: Fashion-MNIST, a generated toy set or a CSV file.";
  spec.params = {
    {"name", param_kind::choice, json{},
     -INFINITY, INFINITY, {"fashion_mnist", "moons", "circles", "blobs", "regression", "csv"},
     "which dataset"},
    {"split", param_kind::choice, "train", -INFINITY, INFINITY, {"train", "test"}, "which split"},
    {"root", param_kind::string, fashion_mnist_root, -INFINITY, INFINITY, {},
     "fashion_mnist: the folder of the gzipped IDX files"},
    {"limit", param_kind::integer, 0, 0, INFINITY, {}, "fashion_mnist: the first N samples (0: all)"},
    {"n_samples", param_kind::integer, 1000, 2, 10'000'000, {}, "generated sets: samples"},
    {"noise", param_kind::number, 0.1, 0, INFINITY, {}, "generated sets: Gaussian noise"},
    {"factor", param_kind::number, 0.5, 0.01, 0.99, {}, "circles: inner radius / outer"},
    {"n_features", param_kind::integer, 2, 1, 100'000, {}, "blobs, regression: features"},
    {"n_classes", param_kind::integer, 3, 2, 10'000, {}, "blobs: classes"},
    {"cluster_std", param_kind::number, 1.0, 0, INFINITY, {}, "blobs: spread of each class"},
    {"path", param_kind::string, "", -INFINITY, INFINITY, {},
     "csv: the file (header row first); a relative path is looked up under each folder of "
     "CODEFYUI_DATA_ROOTS, then /usr/share/datasets"},
    {"label_column", param_kind::string, "", -INFINITY, INFINITY, {},
     "csv: the label's column name (empty: the last column)"},
    {"task", param_kind::choice, "classification", -INFINITY, INFINITY,
     {"classification", "regression"}, "csv: what the label is"},
    {"classes", param_kind::list, nlohmann::json::array(), -INFINITY, INFINITY, {},
     "csv: the class names in class-id order, so that every file numbers them alike (empty: "
     "integer labels are their own ids, text labels are numbered in sorted order)"},
  };
  spec.outputs = {{"dataset", port_type::dataset, true, "the samples and their targets"}};
  spec.check = check_dataset;
  registry.add(std::move(spec));
}

} // namespace cdui::runtime::nodes
