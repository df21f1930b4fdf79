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
#include "runtime/memory_meter.hpp"
#include "runtime/node_call.hpp"
#include "runtime/oom.hpp"
#include "runtime/nodes/activation_checkpoint.hpp"
#include "runtime/nodes/amp.hpp"
#include "runtime/nodes/builtin.hpp"
#include "runtime/nodes/ddp.hpp"
#include "runtime/nodes/distribution.hpp"
#include "runtime/nodes/loop_checkpoints.hpp"
#include "runtime/nodes/loop_report.hpp"
#include "runtime/nodes/loop_setup.hpp"
#include "runtime/nodes/values.hpp"
#include "torch_compat/optim.hpp"

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

/// Whether the loop trains as a rank of the run's DDP ranks: strategy ddp in a run that has them.
bool ranked(node_call& call) {
  return call.string_param("strategy") == "ddp" && call.run().ddp.world_size >= 2;
}

/// The processes that train the model: this one alone, or the run's DDP ranks (strategy ddp on a
/// run that has them; else it trains single and says why).
std::unique_ptr<distribution> distribute(node_call& call, loop_inputs& in, const std::string& device_name) {
  const auto& ranks = call.run().ddp;
  if (call.string_param("strategy") == "ddp") {
    if (ranked(call)) {
      auto ddp = join_ddp(ranks, in.model->module, call);
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
  torch_compat::zero_grad(*s.optimizer);
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
    auto live_before = s.meter ? s.meter->read().live : 0;
    {
      autocast_guard autocast{s.choice.ran, s.device.type()};
      batch_loss = compute_loss(*in.loss, model_forward(*in.model, x).to(at::kFloat), y);
    }
    if (s.meter)
      s.activation_bytes = std::max(s.activation_bytes, s.meter->read().live - live_before);
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
    torch_compat::zero_grad(*s.optimizer);  // a Stop discards the pending window: no step on the way out
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

/// The checkpoint the run resumes this loop from, if any, its weights in the model already.
std::optional<loop_checkpoint> resume(node_call& call, loop_inputs& in) {
  if (call.run().resume_from.empty())
    return std::nullopt;
  if (ranked(call))
    throw node_error("a TrainingLoop with strategy ddp cannot resume from a checkpoint yet; resume it "
                     "with strategy single, or start the run again");
  return read_loop_checkpoint(call, *in.model->module);
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
  auto device_name = ranked(call) ? call.run().ddp.device : call.resolve_device();
  if (torch_device(device_name).type() != c10::DeviceType::CPU) {
    try {
      // A run held to a memory budget outgrows it alone: the card's allocator is capped
      // (docs/training-memory.md, "A run held to its memory budget").
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
  // A run held to a memory budget outgrows it alone: its scope stops there.
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
