// Loss, Optimizer and LRScheduler nodes: each gives a recipe that TrainingLoop applies.
#include <cmath>

#include <torch/torch.h>

#include "runtime/node_call.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/nodes/values.hpp"

namespace cdui::runtime::nodes {

at::Tensor compute_loss(const loss_value& loss, const at::Tensor& output, const at::Tensor& target) {
  if (loss.kind == "cross_entropy")
    return torch::nn::functional::cross_entropy(output, target);
  return torch::nn::functional::mse_loss(output, target.to(output.scalar_type()));
}

std::vector<at::Tensor> trainable_parameters(torch::nn::Module& model) {
  std::vector<at::Tensor> trainable;
  for (auto& p : model.parameters())
    if (p.requires_grad())
      trainable.push_back(p);
  return trainable;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const optimizer_value& spec,
                                                        std::vector<at::Tensor> parameters) {
  namespace optim = torch::optim;
  if (spec.name == "sgd")
    return std::make_unique<optim::SGD>(
      parameters,
      optim::SGDOptions(spec.lr).momentum(spec.momentum).weight_decay(spec.weight_decay));
  if (spec.name == "adam")
    return std::make_unique<optim::Adam>(
      parameters, optim::AdamOptions(spec.lr).weight_decay(spec.weight_decay));
  if (spec.name == "adamw")
    return std::make_unique<optim::AdamW>(
      parameters, optim::AdamWOptions(spec.lr).weight_decay(spec.weight_decay));
  return std::make_unique<optim::RMSprop>(
    parameters,
    optim::RMSpropOptions(spec.lr).momentum(spec.momentum).weight_decay(spec.weight_decay));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups())
    group.options().set_lr(lr);
}

double scheduled_lr(const scheduler_value& s, double base_lr, std::int64_t epochs_done) {
  if (s.kind == "step")
    return base_lr * std::pow(s.gamma, static_cast<double>(epochs_done / s.step_size));
  // Cosine annealing over t_max epochs, as torch.optim.lr_scheduler.CosineAnnealingLR's closed form.
  auto t = static_cast<double>(std::min(epochs_done, s.t_max));
  return s.eta_min + (base_lr - s.eta_min) * (1 + std::cos(M_PI * t / s.t_max)) / 2;
}

namespace {

port_values run_loss(node_call& call) {
  auto loss = std::make_shared<loss_value>();
  loss->kind = call.string_param("kind");
  return {{"loss_fn", make_value(std::move(loss))}};
}

port_values run_optimizer(node_call& call) {
  auto opt = std::make_shared<optimizer_value>();
  opt->name = call.string_param("name");
  opt->lr = call.number_param("lr");
  opt->weight_decay = call.number_param("weight_decay");
  opt->momentum = call.number_param("momentum");
  return {{"optimizer", make_value(std::move(opt))}};
}

port_values run_scheduler(node_call& call) {
  auto s = std::make_shared<scheduler_value>();
  s->kind = call.string_param("kind");
  s->step_size = call.int_param("step_size");
  s->gamma = call.number_param("gamma");
  s->t_max = call.int_param("t_max");
  s->eta_min = call.number_param("eta_min");
  return {{"scheduler", make_value(std::move(s))}};
}

} // namespace

void bind_loss_and_optimizer_nodes_runs(node_runs& runs) {
  runs["Loss"] = run_loss;
  runs["Optimizer"] = run_optimizer;
  runs["LRScheduler"] = run_scheduler;
}

} // namespace cdui::runtime::nodes
