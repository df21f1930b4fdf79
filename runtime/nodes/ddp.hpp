#pragma once

#include <memory>

#include <torch/nn/modules/container/sequential.h>

#include "runtime/engine.hpp"
#include "runtime/nodes/distribution.hpp"

namespace cdui::runtime {
class node_call;
} // namespace cdui::runtime

namespace cdui::runtime::nodes {

/// Joins the run's other ranks for the TrainingLoop of `call` with strategy ddp (docs/ddp.md,
/// "What each rank does"): a c10d FileStore at `rank.rendezvous`, or rank 0's TCPStore across
/// workers (rank 0 says where in a ddp_rendezvous event), Gloo over loopback (GLOO_SOCKET_IFNAME
/// when the environment sets it), every rank starting from rank 0's parameters and buffers, and
/// c10d's Reducer averaging the gradients in buckets while the backward pass runs. Throws
/// node_error when the ranks do not meet within `rank.timeout`, or when this rank is asked to stop
/// before the others came. c10d stays inside ddp.cpp.
[[nodiscard]] std::unique_ptr<distribution> join_ddp(const ddp_rank& rank, torch::nn::Sequential& net,
                                                     node_call& call);

/// Rank `rank`'s part of an epoch's training `order` (every rank is given the same): samples
/// rank, rank + world, ..., with the order padded from its start to a multiple of `world`, so
/// every rank trains as many samples (DistributedSampler's rule).
[[nodiscard]] at::Tensor ddp_training_part(const at::Tensor& order, int rank, int world);

/// Rank `rank`'s part of `samples` validation samples, without repeats: each sample in one part.
[[nodiscard]] at::Tensor ddp_validation_part(std::int64_t samples, int rank, int world);

} // namespace cdui::runtime::nodes
