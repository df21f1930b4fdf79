// The Loss, Optimizer, LRScheduler node specs: params, ports and checks, torch-free (runtime/nodes/optim.cpp runs them).
#include <cmath>

#include "runtime/nodes/builtin.hpp"

namespace cdui::runtime::nodes {

namespace {

std::vector<graph_error> check_optimizer(const graph_node& node) {
  auto name = node.params["name"].get<std::string>();
  if (node.params["momentum"].get<double>() != 0.0 && (name == "adam" || name == "adamw"))
    return {{node.id, "momentum", "node '" + node.id + "' (Optimizer): param 'momentum' applies "
                                    "to sgd and rmsprop, not " + name}};
  return {};
}

} // namespace

void register_loss_and_optimizer_nodes(node_registry& registry) {
  node_spec loss;
  loss.type = "Loss";
  loss.help = "The training objective: cross_entropy for classes, mse for values.";
  loss.params = {{"kind", param_kind::choice, "cross_entropy", -INFINITY, INFINITY,
                  {"cross_entropy", "mse"}, "the loss function (a mean over the batch)"}};
  loss.outputs = {{"loss_fn", port_type::loss_fn, true, ""}};
  registry.add(std::move(loss));

  node_spec opt;
  opt.type = "Optimizer";
  opt.help = "How TrainingLoop updates the weights.";
  opt.params = {
    {"name", param_kind::choice, "adamw", -INFINITY, INFINITY, {"sgd", "adam", "adamw", "rmsprop"}, ""},
    {"lr", param_kind::number, 1e-3, 1e-12, 100, {}, "learning rate"},
    {"weight_decay", param_kind::number, 0.0, 0, 10, {}, ""},
    {"momentum", param_kind::number, 0.0, 0, 0.9999, {}, "sgd and rmsprop"},
  };
  opt.outputs = {{"optimizer", port_type::optimizer, true, ""}};
  opt.check = check_optimizer;
  registry.add(std::move(opt));

  node_spec sched;
  sched.type = "LRScheduler";
  sched.help = "Changes the learning rate after every epoch.";
  sched.params = {
    {"kind", param_kind::choice, "step", -INFINITY, INFINITY, {"step", "cosine"}, ""},
    {"step_size", param_kind::integer, 10, 1, INFINITY, {}, "step: epochs between decays"},
    {"gamma", param_kind::number, 0.1, 0, 1, {}, "step: the decay factor"},
    {"t_max", param_kind::integer, 10, 1, INFINITY, {}, "cosine: epochs to reach eta_min"},
    {"eta_min", param_kind::number, 0.0, 0, INFINITY, {}, "cosine: the lowest rate"},
  };
  sched.outputs = {{"scheduler", port_type::scheduler, true, ""}};
  registry.add(std::move(sched));
}

} // namespace cdui::runtime::nodes
