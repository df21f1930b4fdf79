// EvaluateModel node: loss and accuracy of a model over a DataLoader.
#include <torch/torch.h>

#include "runtime/node_call.hpp"
#include "runtime/nodes/amp.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/nodes/values.hpp"

namespace cdui::runtime::nodes {

evaluation evaluate(torch::nn::Sequential& model, const loader_value& loader,
                    const loss_value* loss, c10::Device device, precision forward_precision,
                    const at::Tensor& order) {
  torch::NoGradGuard no_grad;
  bool was_training = model->is_training();
  model->eval();
  evaluation result;
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  auto batches = order.defined() ? loader.batches_for(order.size(0)) : loader.num_batches();
  for (std::int64_t b = 0; b < batches; ++b) {
    auto [x, y] = get_batch(loader, order, b);
    x = x.to(device);
    y = y.to(device);
    at::Tensor out;
    {
      autocast_guard autocast{forward_precision, device.type()};
      out = model->forward(x).to(at::kFloat);
    }
    auto n = x.size(0);
    if (loss != nullptr) {
      auto batch_loss = compute_loss(*loss, out, y).item<double>();
      loss_sum += batch_loss * static_cast<double>(n);
      result.batch_losses.push_back(batch_loss);
      result.batch_samples.push_back(n);
    }
    if (loader.dataset->classification)
      correct += out.argmax(1).eq(y).sum().item<std::int64_t>();
    result.samples += n;
  }
  if (was_training)
    model->train();
  if (result.samples > 0) {
    result.loss = loss_sum / static_cast<double>(result.samples);
    result.accuracy = static_cast<double>(correct) / static_cast<double>(result.samples);
  }
  return result;
}

namespace {

port_values run_evaluate(node_call& call) {
  auto model = call.input<model_value>("model");
  auto loader = call.input<loader_value>("dataloader");
  auto loss = call.has_input("loss_fn") ? call.input<loss_value>("loss_fn") : nullptr;
  if (model->input_shape != loader->dataset->sample_shape)
    throw node_error("the model takes samples of another shape than dataset "
                     + loader->dataset->name);
  const auto& data = *loader->dataset;
  if (data.classification
      && (model->output_shape.size() != 1 || model->output_shape[0] < data.num_classes))
    throw node_error("the model gives " + std::to_string(model->output_shape.empty() ? 0 : model->output_shape.back())
                     + " outputs per sample, but dataset " + data.name + " has "
                     + std::to_string(data.num_classes) + " classes");
  auto params = model->module->parameters();
  auto device = params.empty() ? c10::Device{c10::kCPU} : params.front().device();
  auto result = evaluate(model->module, *loader, loss.get(), device);
  call.final_metrics = {{"samples", result.samples}};
  if (loader->dataset->classification) {
    call.final_metrics["accuracy"] = result.accuracy;
    call.metric("accuracy", result.accuracy, 0);
  }
  if (loss) {
    call.final_metrics["loss"] = result.loss;
    call.metric("loss", result.loss, 0);
  }
  return {{"metrics", make_value(std::make_shared<nlohmann::json>(call.final_metrics))}};
}

} // namespace

void bind_evaluate_node_runs(node_runs& runs) {
  runs["EvaluateModel"] = run_evaluate;
}

} // namespace cdui::runtime::nodes
