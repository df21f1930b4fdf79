// DDP over c10d (seed 001, "Train one model on several cards"): the FileStore rendezvous, Gloo,
// and the Reducer behind PyTorch's DistributedDataParallel, driven from C++.
#include "runtime/nodes/ddp.hpp"

#include <cstdlib>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#include <torch/torch.h>

#include "runtime/node_call.hpp"

namespace cdui::runtime::nodes {

namespace {

/// The buckets' sizes: PyTorch DDP's defaults (a small first bucket, so the first all-reduce
/// starts early in the backward pass, then 25 MiB).
constexpr std::int64_t first_bucket_bytes = 1024 * 1024;
constexpr std::int64_t bucket_bytes = 25 * 1024 * 1024;

class ddp_distribution final : public distribution {
public:
  ddp_distribution(const ddp_rank& settings, torch::nn::Sequential& net)
      : settings_(settings), buffers_(net->buffers()) {
    try {
      auto store = c10::make_intrusive<c10d::FileStore>(settings.rendezvous.string(), settings.world_size);
      auto options = c10d::ProcessGroupGloo::Options::create(settings.timeout);
      const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(
        iface != nullptr && *iface != '\0' ? iface : "lo"));
      group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, settings.rank, settings.world_size, options);
      // Every rank starts from rank 0's weights.
      broadcast(net->parameters());
      broadcast(buffers_);
    } catch (const std::exception& e) {
      throw node_error("DDP rank " + std::to_string(settings.rank) + " of " + std::to_string(settings.world_size)
                       + " could not join the other ranks: " + first_line(e.what()));
    }
    auto parameters = net->parameters();
    std::vector<bool> sparse(parameters.size(), false);
    auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(
      parameters, {static_cast<std::size_t>(first_bucket_bytes), static_cast<std::size_t>(bucket_bytes)}, sparse);
    reducer_ = std::make_unique<c10d::Reducer>(parameters, buckets, limits, group_, sparse, bucket_bytes,
                                               /*find_unused_parameters=*/false,
                                               /*gradient_as_bucket_view=*/false,
                                               std::unordered_map<std::size_t, std::string>{},
                                               first_bucket_bytes);
  }

  [[nodiscard]] std::string name() const override { return "ddp"; }
  [[nodiscard]] std::string backend() const override { return "gloo"; }
  [[nodiscard]] int world_size() const override { return settings_.world_size; }
  [[nodiscard]] int rank() const override { return settings_.rank; }

  at::Tensor shard(const at::Tensor& order, std::int64_t samples) override {
    auto all = order.defined() ? order : torch::arange(samples, torch::kInt64);
    if (order.defined()) {  // shuffled: rank 0's order on every rank
      std::vector<at::Tensor> one{all};
      group_->broadcast(one)->wait();
    }
    auto n = static_cast<std::int64_t>(settings_.world_size);
    auto total = (samples + n - 1) / n * n;
    // A part that would be short repeats samples from the start, so every rank runs as many batches.
    while (all.size(0) < total)
      all = torch::cat({all, all.narrow(0, 0, std::min(all.size(0), total - all.size(0)))});
    return all.slice(0, settings_.rank, total, n).contiguous();
  }

  at::Tensor part(std::int64_t samples) override {
    return torch::arange(settings_.rank, samples, settings_.world_size, torch::kInt64);
  }

  void before_backward(bool ends_window) override {
    // Only the backward that ends a window all-reduces: the window's inner ones accumulate here.
    if (!ends_window)
      return;
    reducer_->prepare_for_forward();
    reducer_->prepare_for_backward({});
  }

  // The Reducer's hooks have averaged the gradients by the end of the backward.
  void after_window(const std::vector<at::Tensor>&) override {}

  void sync_buffers() override { broadcast(buffers_); }

  double sum(double local) override {
    std::vector<at::Tensor> one{torch::tensor({local}, torch::kDouble)};
    group_->allreduce(one)->wait();
    return one.front().item<double>();
  }

  // Pipelined by one batch: the flags every rank gave at the last batch are read now (their
  // all-reduce ran during that batch), and this batch's go out. Every rank reads the same answer
  // at the same batch, so all stop at one batch, one batch after the first was asked to.
  bool any_stop(bool local) override {
    bool stop = false;
    if (stop_work_) {
      stop_work_->wait();
      stop = stop_flag_.front().item<double>() > 0;
    }
    stop_flag_ = {torch::tensor({local ? 1.0 : 0.0}, torch::kDouble)};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::MAX;
    stop_work_ = group_->allreduce(stop_flag_, options);
    return stop;
  }

  std::vector<double> gather(double local) override {
    auto all = torch::zeros({settings_.world_size}, torch::kDouble);
    all[settings_.rank] = local;
    std::vector<at::Tensor> one{all};
    group_->allreduce(one)->wait();
    return {all.data_ptr<double>(), all.data_ptr<double>() + settings_.world_size};
  }

  [[nodiscard]] std::vector<std::string> devices() const override { return settings_.devices; }

private:
  /// Rank 0's values of `tensors`, on every rank.
  void broadcast(const std::vector<at::Tensor>& tensors) {
    torch::NoGradGuard no_grad;
    for (const auto& t : tensors) {
      std::vector<at::Tensor> one{t.data()};
      group_->broadcast(one)->wait();
    }
  }

  static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

  ddp_rank settings_;
  std::vector<at::Tensor> buffers_;
  /// The stop flags' all-reduce on its way (any_stop).
  std::vector<at::Tensor> stop_flag_;
  c10::intrusive_ptr<c10d::Work> stop_work_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  std::unique_ptr<c10d::Reducer> reducer_;
};

} // namespace

std::unique_ptr<distribution> join_ddp(const ddp_rank& rank, torch::nn::Sequential& net) {
  return std::make_unique<ddp_distribution>(rank, net);
}

} // namespace cdui::runtime::nodes
