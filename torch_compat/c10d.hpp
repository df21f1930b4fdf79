#pragma once
// c10d as both libtorch configurations give it (docs/architecture.md): in 1.13 ProcessGroupGloo
// and ProcessGroupNCCL are process groups; in 2.x they are backends that a ProcessGroup holds, and
// the Reducer's constructor differs. Callers see one process group and one gradient reducer.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace c10d {
class Reducer;
}

namespace cdui::torch_compat {

/// A process group over Gloo on the network interface `interface` ("lo"); it reduces CPU tensors,
/// and CUDA tensors through the host.
[[nodiscard]] c10::intrusive_ptr<c10d::ProcessGroup> gloo_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                                int rank, int size,
                                                                std::chrono::milliseconds timeout,
                                                                const std::string& interface);

/// A c10d TCPStore, the rendezvous of ranks on several machines. `host`: this process hosts it,
/// listening at `address`:`port` (0: a free port) for `world` ranks; else it is a client of the
/// one there, trying to connect for at most `connect_timeout` (the store is up before a client is
/// started: one that cannot be reached is a wrong address or a closed network, said at once rather
/// than after the collective timeout). Its operations then wait at most `timeout`. In torch 2.x the
/// store listens on `address` alone (a socket bound here, handed over); c10d 1.13's binds every
/// interface at that port.
struct tcp_store {
  c10::intrusive_ptr<c10d::Store> store;
  /// The port it listens at (the one chosen when asked for 0).
  int port = 0;
};
[[nodiscard]] tcp_store make_tcp_store(const std::string& address, int port, bool host, int world,
                                       std::chrono::milliseconds timeout,
                                       std::chrono::milliseconds connect_timeout = std::chrono::seconds(60));

/// Whether this build has c10d's NCCL (libtorch with CUDA, and CDUI_NCCL on).
[[nodiscard]] bool has_nccl();

/// A process group over NCCL, this rank on cuda:`card` (made current here). Throws where has_nccl()
/// is false.
[[nodiscard]] c10::intrusive_ptr<c10d::ProcessGroup> nccl_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                                int rank, int size,
                                                                std::chrono::milliseconds timeout, int card);

/// The gradient engine behind PyTorch's DistributedDataParallel (c10d::Reducer) over `parameters`:
/// their gradients are averaged over the group's ranks, in buckets, as the backward pass makes them.
class gradient_reducer {
public:
  /// Buckets as PyTorch DDP's: a first of `first_bucket_bytes`, then `bucket_bytes` each.
  gradient_reducer(const std::vector<at::Tensor>& parameters, c10::intrusive_ptr<c10d::ProcessGroup> group,
                   std::int64_t first_bucket_bytes, std::int64_t bucket_bytes);
  ~gradient_reducer();
  gradient_reducer(const gradient_reducer&) = delete;
  gradient_reducer& operator=(const gradient_reducer&) = delete;

  /// Before a backward pass whose gradients are to be averaged over the ranks.
  void prepare_for_backward();

private:
  std::unique_ptr<c10d::Reducer> reducer_;
};

} // namespace cdui::torch_compat
