#include "runtime/nodes/loop_setup.hpp"

#include <sstream>

#include <torch/torch.h>

#include "devices/cpu_features.hpp"
#include "runtime/node_call.hpp"
#include "runtime/engine.hpp"
#include "runtime/nodes/builtin.hpp"
#include "torch_compat/optim.hpp"

namespace cdui::runtime::nodes {

namespace {

void check_model_fits_data(const model_value& model, const dataset_value& data,
                           const loss_value& loss) {
  if (model.input_shape != data.sample_shape)
    throw node_error("the model takes samples of another shape than the dataloader's dataset ("
                     + data.name + "); connect the same dataset to the Model's 'dataset' input");
  if (loss.kind == "cross_entropy") {
    if (!data.classification)
      throw node_error("loss cross_entropy needs class labels, but dataset " + data.name
                       + " has values; use mse");
    if (model.output_shape.size() != 1 || model.output_shape[0] < data.num_classes)
      throw node_error("the model gives " + std::to_string(model.output_shape.empty() ? 0 : model.output_shape.back())
                       + " outputs per sample, but dataset " + data.name + " has "
                       + std::to_string(data.num_classes) + " classes; set the last Linear layer's "
                       "out_features to " + std::to_string(data.num_classes));
  } else if (data.classification) {
    throw node_error("loss mse needs target values, but dataset " + data.name
                     + " has class labels; use cross_entropy");
  } else {
    std::vector<std::int64_t> target(data.targets.sizes().begin() + 1, data.targets.sizes().end());
    if (model.output_shape != target)
      throw node_error("the model gives " + std::to_string(model.output_shape.empty() ? 0 : model.output_shape.back())
                       + " outputs per sample, but dataset " + data.name + " has "
                       + std::to_string(target.empty() ? 1 : target.back())
                       + " target values per sample; set the last Linear layer's out_features to match");
  }
}

/// How the loop scales the loss, from TrainingLoop.loss_scale and the precision that runs:
/// auto is dynamic for fp16 and off otherwise; a number is a fixed scale.
std::optional<grad_scaler> make_scaler(const nlohmann::json& setting, precision ran) {
  if (setting.is_number())
    return grad_scaler{setting.get<double>(), false};
  auto mode = setting.get<std::string>();
  if (mode == "dynamic" || (mode == "auto" && ran == precision::fp16))
    return grad_scaler{scaler_init_scale, true};
  return std::nullopt;
}

} // namespace

loop_inputs::loop_inputs(node_call& call)
    : model(call.input<model_value>("model")),
      loader(call.input<loader_value>("dataloader")),
      loss(call.input<loss_value>("loss_fn")),
      opt_spec(call.input<optimizer_value>("optimizer")),
      val_loader(call.has_input("val_dataloader") ? call.input<loader_value>("val_dataloader") : nullptr),
      scheduler(call.has_input("scheduler") ? call.input<scheduler_value>("scheduler") : nullptr) {
  check_model_fits_data(*model, *loader->dataset, *loss);
  if (val_loader)
    check_model_fits_data(*model, *val_loader->dataset, *loss);
}

std::string save_optimizer(torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void load_optimizer(torch::optim::Optimizer& optimizer, const std::string& bytes) {
  std::istringstream in{bytes};
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  optimizer.load(archive);
}

void step_window(torch::optim::Optimizer& optimizer, std::optional<grad_scaler>& scaler,
                 const std::vector<at::Tensor>& parameters, double clip) {
  bool finite = true;
  if (scaler)
    finite = scaler->unscale(parameters);
  if (finite && clip > 0)
    torch::nn::utils::clip_grad_norm_(parameters, clip);
  if (scaler)
    scaler->step(optimizer, finite);
  else
    optimizer.step();
  torch_compat::zero_grad(optimizer);
}

loop_setup set_up(node_call& call, loop_inputs& in, const std::string& device_name,
                  devices::memory_scope* scope) {
  loop_setup s;
  s.device_name = device_name;
  s.device = torch_device(device_name);
  s.scope = scope;
  s.epochs = call.int_param("epochs");
  s.max_steps = call.int_param("max_steps");
  s.clip = call.number_param("grad_clip_norm");
  s.accumulate = call.int_param("accumulate_steps");
  auto threads = call.int_param("num_threads");
  if (threads == 0)
    threads = default_loop_threads(call.run().num_threads, in.model->macs_per_sample * in.loader->batch_size);
  set_intra_op_threads(static_cast<int>(threads));

  s.requested_precision = call.string_param("precision");
  s.choice = resolve_precision(s.requested_precision, device_name, cuda_has_bf16(s.device));
  if (s.choice.warning)
    call.warn("precision_fallback", "Node " + call.node().id + " (TrainingLoop): " + *s.choice.warning);
  // bf16 on the CPU (a sim card executes there too): said before it trains when it is slow here.
  if (s.choice.ran == precision::bf16 && s.device.is_cpu())
    if (auto slow = precision_slow_warning(call.node().id, device_name, cpu_bf16_slowdown(),
                                           devices::cpu_bf16_support()))
      call.warn("precision_slow", *slow);
  s.scaler = make_scaler(call.param("loss_scale"), s.choice.ran);
  if (s.scaler && call.has_input("grad_scaler_state")) {
    auto state = call.input<grad_scaler_state_value>("grad_scaler_state");
    if (state->enabled && s.scaler->dynamic())
      s.scaler->restore(state->scale, state->growth_tracker);
  }

  if (scope != nullptr)
    s.meter = scope_meter(*scope);
  else if (s.device.is_cuda())
    s.meter = cuda_meter(s.device.index() < 0 ? 0 : s.device.index());
  auto& net = in.model->module;
  net->to(s.device);
  if (scope != nullptr) {
    // Moving the model "to" the card: copies that the card's scope pays for, as a GPU would hold.
    torch::NoGradGuard no_grad;
    for (auto& p : net->parameters())
      p.set_data(p.data().clone());
    for (auto& b : net->buffers())
      b.set_data(b.clone());
  }
  // Frozen parameters get no gradient and no optimizer state: the optimizer sees the others only.
  s.parameters = trainable_parameters(*net);
  s.optimizer = make_optimizer(*in.opt_spec, s.parameters);
  if (call.has_input("optimizer_state")) {
    auto state = call.input<optimizer_state_value>("optimizer_state");
    if (!state->optimizer.empty() && state->optimizer != in.opt_spec->name)
      throw node_error("input 'optimizer_state' holds " + state->optimizer + " state, but the "
                       "Optimizer is " + in.opt_spec->name + "; resume with the optimizer that saved it");
    if (!state->bytes.empty()) {
      try {
        load_optimizer(*s.optimizer, state->bytes);
      } catch (const c10::Error&) {
        throw node_error("input 'optimizer_state' does not fit this optimizer and model (it was "
                         "saved for another architecture or optimizer)");
      }
    }
    s.epoch_offset = state->epoch;
  }
  return s;
}


std::int64_t training_batches(node_call& call, const loop_inputs& in, std::int64_t samples) {
  const auto& loader = *in.loader;
  auto batches = loader.batches_for(samples);
  const auto& norm = in.model->single_value_norm;
  bool ones = loader.batch_size == 1 || samples == 1;
  if (norm.empty() || (!ones && (loader.drop_last || samples % loader.batch_size != 1)))
    return batches;
  auto why = "layer " + norm + " of the model cannot train on one sample (BatchNorm needs more than one value "
             "per channel)";
  if (ones)
    throw node_error("every training batch holds one sample (" + std::to_string(samples) + " in batches of "
                     + std::to_string(loader.batch_size) + "), and " + why + ": use batches of 2 or more samples");
  call.warn("batch_skipped", "Node " + call.node().id + " (TrainingLoop): the last batch of each epoch holds one sample ("
                               + std::to_string(samples) + " samples in batches of " + std::to_string(loader.batch_size)
                               + "), and " + why + "; the loop skips it, as the DataLoader's drop_last would. Set "
                               "drop_last, or a batch size that leaves no single sample, to say so in the graph");
  return batches - 1;
}

void restore(loop_setup& s, loop_inputs& in, const loop_checkpoint& c) {
  if (!c.optimizer.optimizer.empty() && c.optimizer.optimizer != in.opt_spec->name)
    throw node_error("the checkpoint to resume from holds " + c.optimizer.optimizer + " state, but the "
                     "Optimizer is " + in.opt_spec->name + "; resume with the optimizer that wrote it");
  try {
    load_optimizer(*s.optimizer, c.optimizer.bytes);
  } catch (const c10::Error&) {
    throw node_error("the checkpoint to resume from holds optimizer state that does not fit this optimizer");
  }
  if (s.scaler && c.scaler.enabled && s.scaler->dynamic())
    s.scaler->restore(c.scaler.scale, c.scaler.growth_tracker);
  s.epoch_offset = c.epoch_offset;
}


} // namespace cdui::runtime::nodes
