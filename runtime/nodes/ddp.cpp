// DDP over c10d (docs/ddp.md): the FileStore rendezvous (a TCPStore across workers), Gloo (NCCL for CUDA cards where libtorch
// has it), and the Reducer behind PyTorch's DistributedDataParallel, driven from C++.
#include "runtime/nodes/ddp.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/torch.h>

#include "runtime/node_call.hpp"
#include "runtime/nodes/values.hpp"
#include "storage/credentials.hpp"
#include "torch_compat/c10d.hpp"
#include "torch_compat/signed_store.hpp"

namespace cdui::runtime::nodes {

namespace {

/// The buckets' sizes: PyTorch DDP's defaults (a small first bucket, so the first all-reduce
/// starts early in the backward pass, then 25 MiB).
constexpr std::int64_t first_bucket_bytes = 1024 * 1024;
constexpr std::int64_t bucket_bytes = 25 * 1024 * 1024;

/// The interface the ranks talk over: `variable` (GLOO_SOCKET_IFNAME) when the environment sets
/// it, else loopback.
std::string interface_from(const char* variable) {
  const char* iface = std::getenv(variable);
  return iface != nullptr && *iface != '\0' ? iface : "lo";
}

/// Whether the ranks reduce over NCCL: when the build has it and every rank has a CUDA card of its
/// own (NCCL refuses two ranks on one GPU). Every rank decides alike, from the run's device set
/// (whose names carry their worker across workers: "w2/cuda:0").
bool over_nccl(const std::vector<std::string>& devices) {
  if (!torch_compat::has_nccl())
    return false;
  for (const auto& device : devices)
    if (!torch_device(device.substr(device.rfind('/') + 1)).is_cuda()
        || std::count(devices.begin(), devices.end(), device) > 1)
      return false;
  return true;
}

/// Where the ranks meet: the FileStore in the run's folder within one worker. Across workers, rank
/// 0's TCPStore, hosted once per process (a second ddp loop meets at the same one), its keys under
/// the hash of the run's secret and its values signed with the secret (torch_compat::signed_store,
/// under the prefix so that each MAC covers the full key): a rank takes no value written without
/// the secret, though torch 2.x's TCPStore lists its keys to any client (docs/ddp.md).
/// Rank 0 says where it listens in a ddp_rendezvous event, for the agents to hand the others.
/// Each join (each ddp loop, every rank joining the same loops in the same order) meets under a
/// name of its own: a second loop's group must not read the first's addresses.
c10::intrusive_ptr<c10d::Store> meeting_point(const ddp_rank& settings, node_call& call) {
  static int joins = 0;
  auto join = joins++;
  if (settings.store_host.empty())
    return c10::make_intrusive<c10d::FileStore>(
      settings.rendezvous.string() + (join == 0 ? "" : "-" + std::to_string(join)), settings.world_size);
  static torch_compat::tcp_store tcp;
  if (!tcp.store) {
    tcp = torch_compat::make_tcp_store(settings.store_host, settings.store_port, settings.rank == 0,
                                       settings.world_size, settings.timeout);
    if (settings.rank == 0)
      call.emit("ddp_rendezvous", {{"host", settings.store_host}, {"port", tcp.port}});
  }
  return c10::make_intrusive<c10d::PrefixStore>(
    "cdui-run-" + storage::credential_hash(settings.secret) + "/" + std::to_string(join),
    torch_compat::signed_store(tcp.store, settings.secret, {storage::signed_value, storage::verified_value}));
}

/// Waits until every rank has reached the store, looking every 100 ms whether this one was asked to
/// stop: a rank stopped before the others came (a cancel, a part the server could not assign) ends
/// then, instead of waiting in c10d until the timeout.
void await_ranks(const c10::intrusive_ptr<c10d::Store>& store, const ddp_rank& settings, node_call& call) {
  const std::string key = "cdui-ranks";
  store->add(key, 1);
  auto deadline = std::chrono::steady_clock::now() + settings.timeout;
  while (store->add(key, 0) < settings.world_size) {
    if (call.stop_requested())
      throw std::runtime_error("it was asked to stop before the other ranks came");
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("the other ranks did not all come within "
                               + std::to_string(settings.timeout.count() / 1000) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

/// The rank's process group: NCCL (over_nccl), else Gloo (which reduces CUDA tensors too, through
/// the host).
c10::intrusive_ptr<c10d::ProcessGroup> make_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                  const ddp_rank& settings, c10::Device device) {
  if (over_nccl(settings.devices))
    return torch_compat::nccl_group(store, settings.rank, settings.world_size, settings.timeout, device.index());
  return torch_compat::gloo_group(store, settings.rank, settings.world_size, settings.timeout,
                                  interface_from("GLOO_SOCKET_IFNAME"));
}

class ddp_distribution final : public distribution {
public:
  ddp_distribution(const ddp_rank& settings, torch::nn::Sequential& net, node_call& call)
      : settings_(settings), buffers_(net->buffers()) {
    try {
      auto store = meeting_point(settings, call);
      await_ranks(store, settings, call);
      auto device = torch_device(settings.device);
      group_ = make_group(store, settings, device);
      // NCCL reduces tensors on the card only: the loop's figures travel there and back.
      if (group_->getBackendName() == "nccl")
        wire_ = device;
      // Every rank starts from rank 0's weights.
      broadcast(net->parameters());
      broadcast(buffers_);
    } catch (const std::exception& e) {
      throw node_error("DDP rank " + std::to_string(settings.rank) + " of " + std::to_string(settings.world_size)
                       + " could not join the other ranks: " + first_line(e.what()));
    }
    // As PyTorch's DistributedDataParallel: the Reducer averages the gradients of what trains.
    reducer_ = std::make_unique<torch_compat::gradient_reducer>(trainable_parameters(*net), group_,
                                                                first_bucket_bytes, bucket_bytes);
  }

  [[nodiscard]] std::string name() const override { return "ddp"; }
  [[nodiscard]] std::string backend() const override { return group_->getBackendName(); }
  [[nodiscard]] int world_size() const override { return settings_.world_size; }
  [[nodiscard]] int rank() const override { return settings_.rank; }

  at::Tensor shard(const at::Tensor& order, std::int64_t samples) override {
    auto all = order.defined() ? order : torch::arange(samples, torch::kInt64);
    if (order.defined()) {  // shuffled: rank 0's order on every rank
      std::vector<at::Tensor> one{all.to(wire_)};
      group_->broadcast(one)->wait();
      all = one.front().cpu();
    }
    return ddp_training_part(all, settings_.rank, settings_.world_size);
  }

  at::Tensor part(std::int64_t samples) override {
    return ddp_validation_part(samples, settings_.rank, settings_.world_size);
  }

  void before_backward(bool ends_window) override {
    // Only the backward that ends a window all-reduces: the window's inner ones accumulate here.
    if (!ends_window)
      return;
    reducer_->prepare_for_backward();
  }

  // The Reducer's hooks have averaged the gradients by the end of the backward.
  void after_window(const std::vector<at::Tensor>&) override {}

  void sync_buffers() override { broadcast(buffers_); }

  std::vector<double> sum_each(std::vector<double> local) override {
    std::vector<at::Tensor> one{torch::tensor(local, torch::kDouble).to(wire_)};
    group_->allreduce(one)->wait();
    auto sums = one.front().cpu();
    return {sums.data_ptr<double>(), sums.data_ptr<double>() + local.size()};
  }

  bool any_stop(bool local) override { return sum(local ? 1.0 : 0.0) > 0; }

  // Pipelined by one batch: the answer for the last batch is read now (its all-reduce ran while
  // this batch trained), and this batch's news goes out. Every rank reads the same answer at the
  // same batch, so all stop at one batch, one batch after the first was asked to.
  std::optional<batch_news> batch_done(const batch_news& mine) override {
    auto answer = settle();
    news_ = {torch::tensor({mine.stop ? 1.0 : 0.0, mine.loss}, torch::kDouble).to(wire_)};
    news_mine_ = mine;
    news_work_ = group_->allreduce(news_);
    return answer;
  }

  std::optional<batch_news> settle() override {
    if (!news_work_)
      return std::nullopt;
    news_work_->wait();
    news_work_.reset();
    auto sums = news_.front().cpu();
    const auto* sum = sums.data_ptr<double>();
    return batch_news{news_mine_.step, news_mine_.ends_step, sum[0] > 0, sum[1] / settings_.world_size};
  }

  std::vector<double> gather(double local) override {
    auto all = torch::zeros({settings_.world_size}, torch::kDouble);
    all[settings_.rank] = local;
    std::vector<at::Tensor> one{all.to(wire_)};
    group_->allreduce(one)->wait();
    all = one.front().cpu();
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
  /// The last batch's news on its way (batch_done): {stop, loss} summed over the ranks.
  std::vector<at::Tensor> news_;
  batch_news news_mine_;
  c10::intrusive_ptr<c10d::Work> news_work_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  /// Where the loop's figures are reduced: the card under NCCL, else the host.
  c10::Device wire_{c10::kCPU};
  std::unique_ptr<torch_compat::gradient_reducer> reducer_;
};

} // namespace

at::Tensor ddp_training_part(const at::Tensor& order, int rank, int world) {
  auto all = order;
  auto n = static_cast<std::int64_t>(world);
  auto total = (order.size(0) + n - 1) / n * n;
  // A part that would be short repeats samples from the start, so every rank runs as many batches.
  while (all.size(0) < total)
    all = torch::cat({all, all.narrow(0, 0, std::min(all.size(0), total - all.size(0)))});
  return all.slice(0, rank, total, n).contiguous();
}

at::Tensor ddp_validation_part(std::int64_t samples, int rank, int world) {
  return torch::arange(rank, samples, world, torch::kInt64);
}

std::unique_ptr<distribution> join_ddp(const ddp_rank& rank, torch::nn::Sequential& net, node_call& call) {
  return std::make_unique<ddp_distribution>(rank, net, call);
}

} // namespace cdui::runtime::nodes
