// TrainingLoop node: trains a model over epochs of a DataLoader, validating after each epoch.
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>

#include <torch/torch.h>

#include "devices/memory.hpp"
#include "devices/sim_card_registry.hpp"
#include "runtime/node_call.hpp"
#include "runtime/oom.hpp"
#include "runtime/nodes/activation_checkpoint.hpp"
#include "runtime/nodes/amp.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/nodes/ddp.hpp"
#include "runtime/nodes/distribution.hpp"
#include "runtime/nodes/loop_checkpoints.hpp"
#include "runtime/nodes/values.hpp"

namespace cdui::runtime::nodes {

namespace {

using clock = std::chrono::steady_clock;

/// train_loss_batch: at every `every`-th optimizer step, the mean loss of the batches of the last
/// `every` steps (each averaged over the processes), its step the optimizer step (0: no series).
class batch_series {
public:
  explicit batch_series(std::int64_t every) : every_(every) {}

  void add(node_call& call, const batch_news& news) {
    if (every_ <= 0)
      return;
    sum_ += news.loss;
    ++count_;
    if (!news.ends_step || news.step % every_ != 0)
      return;
    call.metric("train_loss_batch", sum_ / static_cast<double>(count_), news.step, "step");
    sum_ = 0.0;
    count_ = 0;
  }

private:
  std::int64_t every_;
  double sum_ = 0.0;
  std::int64_t count_ = 0;
};

nlohmann::json number_or_null(double x) {
  return std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x);
}

/// Rate-limits progress events: the first and last batch of an epoch always, otherwise at most one
/// per interval (0: every batch).
class progress_throttle {
public:
  explicit progress_throttle(std::int64_t interval_ms) : interval_(interval_ms) {}

  bool due(std::int64_t batch, std::int64_t batches) {
    auto now = clock::now();
    if (interval_.count() > 0 && batch != 1 && batch != batches && now - last_ < interval_)
      return false;
    last_ = now;
    return true;
  }

private:
  std::chrono::milliseconds interval_;
  clock::time_point last_{};
};

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

/// One optimizer step over the accumulated window: unscale (once), clip over the whole accumulated
/// gradient, step (or skip on an overflow), clear the gradients.
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
  optimizer.zero_grad();
}

/// What the loop reads from its inputs.
struct loop_inputs {
  std::shared_ptr<model_value> model;
  std::shared_ptr<loader_value> loader;
  std::shared_ptr<loss_value> loss;
  std::shared_ptr<optimizer_value> opt_spec;
  std::shared_ptr<loader_value> val_loader;  // none: no validation
  std::shared_ptr<scheduler_value> scheduler;

  explicit loop_inputs(node_call& call)
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
};

/// The loop's settings and what it trains with, set up once.
struct loop_setup {
  std::string device_name;
  c10::Device device{c10::kCPU};
  /// The card's memory scope when the device executes on the host (cpu, sim); else none.
  devices::memory_scope* scope = nullptr;
  /// With a scope: the most bytes a forward pass (and the loss) kept for the backward pass.
  std::int64_t activation_bytes = 0;
  std::int64_t epochs = 1;
  std::int64_t max_steps = 0;
  double clip = 0.0;
  std::int64_t accumulate = 1;
  std::string requested_precision;
  precision_choice choice;
  std::optional<grad_scaler> scaler;
  std::vector<at::Tensor> parameters;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  /// The epochs a resumed optimizer state had run already.
  std::int64_t epoch_offset = 0;
  std::int64_t batches_per_epoch = 0;
};

/// Reads the params, resolves the precision and the scaler, moves the model to the card and builds
/// the optimizer (restoring a resumed state).
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
  set_intra_op_threads(static_cast<int>(threads > 0 ? threads : call.run().num_threads));

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

/// Whether the loop trains as a rank of the run's DDP ranks: strategy ddp in a run that has them.
bool ranked(node_call& call) {
  return call.string_param("strategy") == "ddp" && call.run().ddp.world_size >= 2;
}

/// How the loop was spread over processes, for node_config and the final metrics.
void add_strategy(nlohmann::json& j, const distribution& dist) {
  j["strategy"] = dist.name();
  j["world_size"] = dist.world_size();
  if (!dist.backend().empty())
    j["backend"] = dist.backend();
}

/// The processes that train the model: this one alone, or the run's DDP ranks (strategy ddp on a
/// run that has them; else it trains single and says why).
std::unique_ptr<distribution> distribute(node_call& call, loop_inputs& in, const std::string& device_name) {
  const auto& ranks = call.run().ddp;
  if (call.string_param("strategy") == "ddp") {
    if (ranked(call)) {
      auto ddp = join_ddp(ranks, in.model->module);
      // Every rank built the same data and model from the run's seed; from here rank k draws its
      // own randomness (dropout masks) from seed + k, and rank 0 draws on as a single run does.
      if (ranks.rank > 0)
        call.rng().set_current_seed(call.run().seed + static_cast<std::uint64_t>(ranks.rank));
      return ddp;
    }
    call.warn("ddp_not_available",
              "Node " + call.node().id + " (TrainingLoop): strategy ddp trains across the cards of a "
              "run queued on a worker with a device set of two or more cards; this run executes in "
              "one process on " + device_name + ", so the loop trains there as with strategy single");
  }
  return std::make_unique<single_process>(device_name);
}

/// The epochs' batches for this process's part of the data, and node_config.
void announce(node_call& call, loop_inputs& in, loop_setup& s, const distribution& dist) {
  auto n = static_cast<std::int64_t>(dist.world_size());
  s.batches_per_epoch = in.loader->batches_for((in.loader->dataset->size() + n - 1) / n);
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

/// Validation after an epoch: val_loss (and val_accuracy) over every process's part, each sample
/// once, and val_loss_step, each validation batch's loss over the processes.
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

/// The run generator's state now.
at::Tensor rng_state(node_call& call) {
  devices::memory_scope_guard host{nullptr};  // on the host, not on the card
  std::lock_guard<std::mutex> lock{call.rng().mutex()};
  return call.rng().get_state();
}

void set_rng_state(node_call& call, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock{call.rng().mutex()};
  call.rng().set_state(state);
}

/// The loop's checkpoints (checkpoint_every, checkpoint_every_steps, keep_checkpoints, and the
/// interrupt checkpoint of a Stop), written by the process that reports: the generator's state at
/// the start of the epoch in progress, and the place of the last optimizer step, where an
/// interrupt checkpoint continues from (a Stop drops the window after it).
struct checkpointing {
  std::int64_t every_epochs = 0;
  std::int64_t every_steps = 0;
  std::int64_t keep = 3;
  bool writes = false;
  at::Tensor epoch_rng;
  std::optional<loop_totals> last_step;
  at::Tensor last_step_rng;

  checkpointing(node_call& call, const distribution& dist)
      : every_epochs(call.int_param("checkpoint_every")),
        every_steps(call.int_param("checkpoint_every_steps")),
        keep(call.int_param("keep_checkpoints")),
        writes(dist.primary()) {}

  /// A checkpoint of the loop at `at` (its generator state `rng`) with the model, optimizer and
  /// scaler as they are now.
  void write(node_call& call, loop_inputs& in, loop_setup& s, const loop_totals& at, const at::Tensor& rng,
             bool interrupt) const {
    loop_checkpoint c;
    c.node = call.node().id;
    c.at = at;
    c.epoch_offset = s.epoch_offset;
    c.epoch_rng = epoch_rng;
    c.rng = rng;
    c.optimizer = {save_optimizer(*s.optimizer), s.epoch_offset + at.epochs_run, in.opt_spec->name};
    if (s.scaler)
      c.scaler = {true, s.scaler->current_scale(), s.scaler->growth_tracker()};
    write_loop_checkpoint(call, *in.model->module, c, interrupt, keep);
  }

  /// After each optimizer step: its place, and a checkpoint every `every_steps`.
  void after_step(node_call& call, loop_inputs& in, loop_setup& s, const loop_totals& totals) {
    if (!writes)
      return;
    last_step = totals;
    last_step_rng = rng_state(call);
    if (every_steps > 0 && totals.steps % every_steps == 0)
      write(call, in, s, totals, last_step_rng, false);
  }

  /// After a whole epoch and its validation: the next epoch is where a resumed run continues, and
  /// a checkpoint every `every_epochs`.
  void after_epoch(node_call& call, loop_inputs& in, loop_setup& s, const loop_totals& totals) {
    if (!writes)
      return;
    loop_totals next = totals;
    next.epoch = totals.epoch + 1;
    next.epoch_batch = 0;
    next.epoch_loss_sum = 0.0;
    next.epoch_samples = 0;
    last_step = next;
    last_step_rng = rng_state(call);
    epoch_rng = last_step_rng;
    if (every_epochs > 0 && totals.epoch % every_epochs == 0)
      write(call, in, s, next, last_step_rng, false);
  }

  /// A Stop: the interrupt checkpoint, from the last step (none before the first).
  void after_stop(node_call& call, loop_inputs& in, loop_setup& s) const {
    if (writes && last_step && last_step->steps > 0)
      write(call, in, s, *last_step, last_step_rng, true);
  }
};

/// One epoch: its batches in micro-batch windows, the progress events, train_loss_batch, the
/// epoch's train_loss when it ran whole, and validation. False when the loop ends here (a Stop,
/// max_steps, nothing trained).
/// `resumed`: the checkpoint the run continues from, for the epoch it was written in.
bool run_epoch(node_call& call, loop_inputs& in, loop_setup& s, distribution& dist, loop_totals& totals,
               progress_throttle& throttle, batch_series& series, checkpointing& ck,
               const loop_checkpoint* resumed) {
  auto& net = in.model->module;
  const auto& loader = *in.loader;
  auto epoch = s.epoch_offset + totals.epoch;
  if (in.scheduler)
    set_learning_rate(*s.optimizer, scheduled_lr(*in.scheduler, in.opt_spec->lr, epoch - 1));
  net->train();
  at::Tensor order;
  {
    // The sampler's order lives on the host, as a DataLoader's indices do: not on the card. A
    // resumed epoch draws it again from the generator's state at its start, then, when it resumes
    // inside the epoch, goes on from the checkpoint's (at an epoch's start, drawing the order
    // brought the generator where the uninterrupted run had it).
    devices::memory_scope_guard host{nullptr};
    if (resumed != nullptr)
      set_rng_state(call, resumed->epoch_rng);
    if (ck.writes)
      ck.epoch_rng = rng_state(call);
    order = dist.shard(epoch_order(loader, call.rng()), loader.dataset->size());
    if (resumed != nullptr && resumed->at.epoch_batch > 0)
      set_rng_state(call, resumed->rng);
  }
  if (resumed == nullptr) {
    totals.epoch_batch = 0;
    totals.epoch_loss_sum = 0.0;
    totals.epoch_samples = 0;
  }
  std::int64_t window = 0;  // micro-batches accumulated since the last step
  auto epoch_start = clock::now();
  s.optimizer->zero_grad();
  // A Stop that came between epochs (during validation) ends the loop before this one trains.
  totals.stopped = dist.any_stop(call.stop_requested());
  for (std::int64_t b = totals.epoch_batch; b < s.batches_per_epoch && !totals.stopped; ++b) {
    auto [x, y] = get_batch(loader, order, b);
    x = x.to(s.device);
    y = y.to(s.device);
    if (s.scope != nullptr && x.is_view()) {
      // An unshuffled batch is a view of the host's dataset; on a card it would be a copy.
      x = x.clone();
      y = y.clone();
    }
    at::Tensor batch_loss;
    auto live_before = s.scope != nullptr ? s.scope->stats().live : 0;
    {
      autocast_guard autocast{s.choice.ran, s.device.type()};
      batch_loss = compute_loss(*in.loss, model_forward(*in.model, x).to(at::kFloat), y);
    }
    if (s.scope != nullptr)
      s.activation_bytes = std::max(s.activation_bytes, s.scope->stats().live - live_before);
    // A window never spans an epoch: the epoch's last micro-batches step as a short window.
    bool ends_window = window + 1 == s.accumulate || b + 1 == s.batches_per_epoch;
    // Each micro-batch's loss is divided by N, so the window's gradient is that of one batch
    // N times larger; the loss reported stays undivided.
    auto scaled = s.accumulate > 1 ? batch_loss / static_cast<double>(s.accumulate) : batch_loss;
    dist.before_backward(ends_window);
    (s.scaler ? s.scaler->scale(scaled) : scaled).backward();
    auto value = batch_loss.item<double>();
    ++totals.batches;
    ++totals.epoch_batch;
    totals.epoch_loss_sum += value * static_cast<double>(x.size(0));
    totals.epoch_samples += x.size(0);
    ++window;
    if (ends_window) {
      dist.after_window(s.parameters);
      step_window(*s.optimizer, s.scaler, s.parameters, s.clip);
      ++totals.steps;
      window = 0;
      ck.after_step(call, in, s, totals);
    }
    if (throttle.due(b + 1, s.batches_per_epoch)) {
      auto elapsed = std::chrono::duration<double>(clock::now() - epoch_start).count();
      auto samples = totals.epoch_samples;
      auto rate = elapsed > 0 ? static_cast<double>(samples) / elapsed : 0.0;
      auto part = order.defined() ? order.size(0) : loader.dataset->size();
      auto eta = rate > 0 ? static_cast<double>(part - samples) / rate : 0.0;
      call.emit("progress", {{"epoch", epoch},
                             {"epochs", s.epoch_offset + s.epochs},
                             {"batch", b + 1},
                             {"batches", s.batches_per_epoch},
                             {"step", totals.steps},
                             {"batch_samples", x.size(0)},
                             {"loss", value},
                             {"samples_per_s", rate},
                             {"eta_s", std::max(0.0, eta)}});
    }
    if (auto news = dist.batch_done({totals.steps, ends_window, call.stop_requested(), value})) {
      series.add(call, *news);
      totals.stopped = news->stop;
    }
    if (!totals.stopped && s.max_steps > 0 && totals.steps >= s.max_steps) {
      totals.stopped_at_max_steps = true;
      break;
    }
  }
  if (auto news = dist.settle())
    series.add(call, *news);
  if (totals.stopped) {
    s.optimizer->zero_grad();  // a Stop discards the pending window: no step on the way out
    return false;
  }
  if (totals.epoch_batch == 0)
    return false;
  // Only a whole epoch counts: one that max_steps cut short gets no train_loss (its mean would
  // be over part of the data), and resuming from optimizer_state runs it again.
  bool whole = totals.epoch_batch == s.batches_per_epoch;
  if (whole) {
    ++totals.epochs_run;
    auto sums = dist.sum_each({totals.epoch_loss_sum, static_cast<double>(totals.epoch_samples)});
    totals.last_train_loss = sums[0] / sums[1];
    call.metric("train_loss", totals.last_train_loss, epoch);
  }
  // Validation runs either way: it measures the model the node hands on.
  if (in.val_loader)
    validate(call, in, s, dist, epoch, totals);
  if (whole)
    ck.after_epoch(call, in, s, totals);
  return !totals.stopped_at_max_steps;
}

/// The final metrics and the loop's outputs: the trained model, its metrics, the optimizer's and
/// the scaler's state to resume from.
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
  if (s.scope != nullptr) {
    // Each card's peak, the most its rank used of it, and the most its forward passes kept.
    auto cards = dist.devices();
    for (auto [name, bytes] : {std::pair{"peak_memory_bytes", s.scope->stats().peak},
                               std::pair{"activation_bytes", s.activation_bytes}}) {
      auto gathered = dist.gather(static_cast<double>(bytes));
      call.final_metrics[name] = nlohmann::json::object();
      for (std::size_t k = 0; k < gathered.size() && k < cards.size(); ++k)
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

/// The checkpoint the run resumes this loop from, if any, its weights in the model already.
std::optional<loop_checkpoint> resume(node_call& call, loop_inputs& in) {
  if (call.run().resume_from.empty())
    return std::nullopt;
  if (ranked(call))
    throw node_error("a TrainingLoop with strategy ddp cannot resume from a checkpoint yet; resume it "
                     "with strategy single, or start the run again");
  return read_loop_checkpoint(call, *in.model->module);
}

/// Continues from a checkpoint: the optimizer's and the loss scaler's state, and the epochs a
/// resumed optimizer_state had run.
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

/// Trains: set up, the epochs (from a checkpoint's place when the run resumes), the report, with
/// the loop's distribution over processes; a Stop writes the interrupt checkpoint.
port_values train(node_call& call, const std::string& device_name, devices::memory_scope* scope) {
  loop_inputs in{call};
  auto resumed = resume(call, in);
  auto s = set_up(call, in, device_name, scope);
  if (resumed)
    restore(s, in, *resumed);
  auto dist = distribute(call, in, device_name);
  announce(call, in, s, *dist);
  loop_totals totals = resumed ? resumed->at : loop_totals{};
  progress_throttle throttle{call.int_param("progress_interval_ms")};
  batch_series series{call.int_param("train_loss_batch_every")};
  checkpointing ck{call, *dist};
  for (bool first = true; totals.epoch <= s.epochs; ++totals.epoch, first = false)
    if (!run_epoch(call, in, s, *dist, totals, throttle, series, ck, first && resumed ? &*resumed : nullptr))
      break;
  if (totals.stopped)
    ck.after_stop(call, in, s);
  return report(call, in, s, *dist, totals);
}

/// The memory of the card `device` names, when it is simulated; 0 (no cap) otherwise.
std::int64_t sim_card_bytes(const std::string& device, const devices::host_devices& host) {
  if (device.rfind("sim:", 0) != 0)
    return 0;
  auto index = static_cast<std::size_t>(std::stoi(device.substr(4)));
  return index < host.sim_total_bytes.size() ? host.sim_total_bytes[index] : 0;
}

port_values run_training_loop(node_call& call) {
  // Under DDP rank k trains on the run's card k, whatever card the loop's device param names.
  auto device_name = ranked(call) ? call.run().ddp.devices.at(static_cast<std::size_t>(call.run().ddp.rank))
                                  : call.resolve_device();
  if (torch_device(device_name).type() != c10::DeviceType::CPU) {
    try {
      // A run held to a memory budget outgrows it alone (seed 001): the card's allocator is capped.
      accelerator_cap cap{device_name, call.run().memory_budget};
      return train(call, device_name, nullptr);
    } catch (const c10::OutOfMemoryError& e) {
      // The caching allocator's free blocks go back, so the next run starts from a clean card.
      auto figures = release_accelerator_cache(device_name);
      if (call.run().memory_budget > 0 && (figures.total == 0 || call.run().memory_budget < figures.total)) {
        figures.budget = call.run().memory_budget;
        figures.budget_source = call.run().memory_budget_source;
      }
      std::string original = e.what_without_backtrace();
      throw node_oom_error(node_oom_message("TrainingLoop", call.node().id, figures,
                                            original.substr(0, original.find('\n'))));
    }
  }
  auto card = sim_card_bytes(device_name, call.run().host);
  // A run held to a memory budget outgrows it alone: its scope stops there (seed 001).
  auto budget = call.run().memory_budget;
  bool held_to_budget = budget > 0 && (card == 0 || budget < card);
  auto cap = held_to_budget ? budget : card;
  // On a sim card the run charges the card's shared count too, whatever its own cap.
  auto scope = std::make_shared<devices::memory_scope>(device_name, cap,
                                                       devices::sim_card_for(device_name, card));
  try {
    devices::memory_scope_guard guard{scope};
    return train(call, device_name, scope.get());
  } catch (const c10::OutOfMemoryError& e) {
    // The figures of the moment the allocation failed; by now the loop's tensors are freed.
    auto s = scope->stats();
    auto held = scope->live_at_failure();
    oom_figures figures{device_name, card > 0, held, held, s.peak, card,
                        held_to_budget ? budget : 0, call.run().memory_budget_source};
    std::string original = e.what_without_backtrace();
    throw node_oom_error(node_oom_message("TrainingLoop", call.node().id, figures,
                                          original.substr(0, original.find('\n'))));
  }
}

} // namespace

void bind_training_loop_node_runs(node_runs& runs) {
  runs["TrainingLoop"] = run_training_loop;
}

} // namespace cdui::runtime::nodes
