#include "runtime/nodes/loop_report.hpp"

#include <cmath>

#include <torch/torch.h>

#include "runtime/node_call.hpp"
#include "runtime/nodes/builtin.hpp"

namespace cdui::runtime::nodes {

namespace {

nlohmann::json number_or_null(double x) {
  return std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x);
}

/// How the loop was spread over processes, for node_config and the final metrics.
void add_strategy(nlohmann::json& j, const distribution& dist) {
  j["strategy"] = dist.name();
  j["world_size"] = dist.world_size();
  if (!dist.backend().empty())
    j["backend"] = dist.backend();
}


} // namespace

void announce(node_call& call, loop_inputs& in, loop_setup& s, const distribution& dist) {
  auto n = static_cast<std::int64_t>(dist.world_size());
  s.batches_per_epoch = training_batches(call, in, (in.loader->dataset->size() + n - 1) / n);
  nlohmann::json config{{"device", s.device_name},
                        {"precision", to_string(s.choice.ran)},
                        {"epochs", s.epochs},
                        {"batches_per_epoch", s.batches_per_epoch},
                        {"batch_size", in.loader->batch_size},
                        {"accumulate_steps", s.accumulate},
                        {"effective_batch_size", in.loader->batch_size * s.accumulate * dist.world_size()},
                        {"loss_scale", s.scaler ? nlohmann::json(s.scaler->current_scale()) : nlohmann::json("off")},
                        {"num_threads", at::get_num_threads()},
                        {"optimizer", in.opt_spec->name},
                        {"start_epoch", s.epoch_offset + 1}};
  config.update(parameter_figures(*in.model));
  add_strategy(config, dist);
  if (s.requested_precision != to_string(s.choice.ran))
    config["precision_requested"] = s.requested_precision;
  call.emit("node_config", config);
}

void validate(node_call& call, loop_inputs& in, loop_setup& s, distribution& dist, std::int64_t epoch,
              loop_totals& totals) {
  // Validation runs under the same autocast as training, so the two curves stay comparable.
  // Under DDP each rank evaluates its part with rank 0's BatchNorm statistics.
  dist.sync_buffers();
  auto size = in.val_loader->dataset->size();
  auto v = evaluate(in.model->module, *in.val_loader, in.loss.get(), s.device, s.choice.ran, dist.part(size));
  // One all-reduce: samples, the loss and accuracy sums, then each batch's loss sum and samples
  // (as many batches on every process: the largest part's, the shorter parts' last ones empty).
  auto n = static_cast<std::int64_t>(dist.world_size());
  auto batches = static_cast<std::size_t>(in.val_loader->batches_for((size + n - 1) / n));
  std::vector<double> local(3 + 2 * batches, 0.0);
  auto samples = static_cast<double>(v.samples);
  local[0] = samples;
  local[1] = v.loss * samples;
  local[2] = v.accuracy * samples;
  for (std::size_t i = 0; i < v.batch_losses.size() && i < batches; ++i) {
    local[3 + i] = v.batch_losses[i] * static_cast<double>(v.batch_samples[i]);
    local[3 + batches + i] = static_cast<double>(v.batch_samples[i]);
  }
  auto all = dist.sum_each(std::move(local));
  for (std::size_t i = 0; i < batches; ++i)
    if (all[3 + batches + i] > 0)
      call.metric("val_loss_step", all[3 + i] / all[3 + batches + i], ++totals.val_batches, "batch");
  auto per_sample = [&](double sum) { return all[0] > 0 ? sum / all[0] : 0.0; };
  totals.last_val_loss = per_sample(all[1]);
  call.metric("val_loss", totals.last_val_loss, epoch);
  if (in.val_loader->dataset->classification) {
    totals.last_val_accuracy = per_sample(all[2]);
    call.metric("val_accuracy", totals.last_val_accuracy, epoch);
  }
}


port_values report(node_call& call, loop_inputs& in, loop_setup& s, distribution& dist,
                   const loop_totals& totals) {
  call.final_metrics = {{"final_train_loss", number_or_null(totals.last_train_loss)},
                        {"final_val_loss", number_or_null(totals.last_val_loss)},
                        {"total_steps", totals.steps},
                        {"total_batches", totals.batches},
                        {"total_epochs_run", totals.epochs_run},
                        {"stopped_at_max_steps", totals.stopped_at_max_steps},
                        {"effective_batch_size", in.loader->batch_size * s.accumulate * dist.world_size()},
                        {"precision", to_string(s.choice.ran)}};
  call.final_metrics.update(parameter_figures(*in.model));
  add_strategy(call.final_metrics, dist);
  if (s.requested_precision != to_string(s.choice.ran))
    call.final_metrics["precision_requested"] = s.requested_precision;
  if (!std::isnan(totals.last_val_accuracy))
    call.final_metrics["final_val_accuracy"] = totals.last_val_accuracy;
  if (s.meter) {
    // Each card's peak, the most its rank used of it, and the most its forward passes kept (and on
    // CUDA the context, where measured: a rank's -1 is left out).
    auto cards = dist.devices();
    auto reading = s.meter->read();
    reading.context = s.meter->context();
    for (const auto& [name, bytes] : memory_figures(reading, s.activation_bytes)) {
      auto gathered = dist.gather(static_cast<double>(bytes));
      call.final_metrics[name] = nlohmann::json::object();
      for (std::size_t k = 0; k < gathered.size() && k < cards.size(); ++k)
        if (gathered[k] >= 0)
          call.final_metrics[name][cards[k]] = static_cast<std::int64_t>(gathered[k]);
    }
  }
  auto scaler_state = std::make_shared<grad_scaler_state_value>();
  if (s.scaler) {
    call.final_metrics["skipped_steps"] = s.scaler->skipped_steps();
    call.final_metrics["loss_scale"] = s.scaler->current_scale();
    *scaler_state = {true, s.scaler->current_scale(), s.scaler->growth_tracker()};
  }
  auto state = std::make_shared<optimizer_state_value>();
  state->bytes = save_optimizer(*s.optimizer);
  state->epoch = s.epoch_offset + totals.epochs_run;
  state->optimizer = in.opt_spec->name;
  auto metrics = std::make_shared<nlohmann::json>(call.final_metrics);
  return {{"model", make_value(std::move(in.model))},
          {"metrics", make_value(std::move(metrics))},
          {"optimizer_state", make_value(std::move(state))},
          {"grad_scaler_state", make_value(std::move(scaler_state))}};
}


} // namespace cdui::runtime::nodes
