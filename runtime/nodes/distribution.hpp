#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace cdui::runtime::nodes {

/// One trained batch as every process saw it: the optimizer steps taken after it and whether it
/// ended a step's window (the same on every process), whether a process was asked to stop, and
/// the batch's loss (averaged over the processes, when that is what `batch_done` answers).
struct batch_news {
  std::int64_t step = 0;
  bool ends_step = false;
  bool stop = false;
  double loss = 0.0;
};

/// How a TrainingLoop spreads one model's training over processes (TrainingLoop.strategy;
/// docs/ddp.md): which samples this process trains, what becomes of the gradients of a window
/// before the optimizer steps, how a figure is combined over the processes, and which process
/// reports. The loop calls it at those points only; `single_process` (the default) trains
/// everything here and changes nothing.
class distribution {
public:
  virtual ~distribution() = default;

  /// The strategy's name, as the loop's config and metrics report it ("single", "ddp").
  [[nodiscard]] virtual std::string name() const = 0;
  /// The collectives' backend ("gloo"); empty for one process.
  [[nodiscard]] virtual std::string backend() const = 0;
  /// How many processes train the model, and which one this is (0: the one that reports).
  [[nodiscard]] virtual int world_size() const = 0;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] bool primary() const { return rank() == 0; }

  /// This process's part of an epoch's training order over `samples` samples (`order`: a
  /// permutation, or undefined for in order; the result too). Every process gets as many samples:
  /// a part that would be short repeats samples from the start of the order.
  [[nodiscard]] virtual at::Tensor shard(const at::Tensor& order, std::int64_t samples) = 0;
  /// This process's part of `samples` samples for an evaluation, each sample in one part only
  /// (undefined: all of them, in order).
  [[nodiscard]] virtual at::Tensor part(std::int64_t samples) = 0;
  /// Before each micro-batch's backward: whether that backward ends an optimizer window (only
  /// then are the gradients combined; the window's inner backwards stay local).
  virtual void before_backward(bool ends_window) = 0;
  /// After the backward that ends a window, before the optimizer steps: every process holds the
  /// same gradients from here on.
  virtual void after_window(const std::vector<at::Tensor>& parameters) = 0;
  /// Before an evaluation: every process takes the buffers (BatchNorm's running statistics) of
  /// the one that reports, so each evaluates the model that process hands on.
  virtual void sync_buffers() = 0;
  /// Figures summed over every process, each on its own (loss sums, sample counts); every
  /// process gives as many.
  [[nodiscard]] virtual std::vector<double> sum_each(std::vector<double> local) = 0;
  [[nodiscard]] double sum(double local) { return sum_each({local}).front(); }
  /// Whether any process was asked to stop (every process waits for the others' answer).
  [[nodiscard]] virtual bool any_stop(bool local) = 0;
  /// After each trained batch: this process's news of it goes to the others. The answer is a
  /// batch every process trained, its stop the OR and its loss the mean over the processes: this
  /// one, or (DDP, which exchanges while the next batch trains) the one before; none yet. Every
  /// process gets the same answers at the same batches, so all stop at one batch.
  [[nodiscard]] virtual std::optional<batch_news> batch_done(const batch_news& mine) = 0;
  /// The answer still on its way, if any (at the end of an epoch's batches).
  [[nodiscard]] virtual std::optional<batch_news> settle() = 0;
  /// Each process's figure, by rank.
  [[nodiscard]] virtual std::vector<double> gather(double local) = 0;
  /// Each process's device, by rank, as the run names it.
  [[nodiscard]] virtual std::vector<std::string> devices() const = 0;
};

/// One process trains the whole model on its one device: every call is the identity.
class single_process final : public distribution {
public:
  explicit single_process(std::string device) : device_(std::move(device)) {}
  [[nodiscard]] std::string name() const override { return "single"; }
  [[nodiscard]] std::string backend() const override { return ""; }
  [[nodiscard]] int world_size() const override { return 1; }
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] at::Tensor shard(const at::Tensor& order, std::int64_t) override { return order; }
  [[nodiscard]] at::Tensor part(std::int64_t) override { return {}; }
  void before_backward(bool) override {}
  void after_window(const std::vector<at::Tensor>&) override {}
  void sync_buffers() override {}
  [[nodiscard]] std::vector<double> sum_each(std::vector<double> local) override { return local; }
  [[nodiscard]] bool any_stop(bool local) override { return local; }
  [[nodiscard]] std::optional<batch_news> batch_done(const batch_news& mine) override { return mine; }
  [[nodiscard]] std::optional<batch_news> settle() override { return std::nullopt; }
  [[nodiscard]] std::vector<double> gather(double local) override { return {local}; }
  [[nodiscard]] std::vector<std::string> devices() const override { return {device_}; }

private:
  std::string device_;
};

} // namespace cdui::runtime::nodes
