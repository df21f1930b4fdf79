#include "torch_compat/c10d.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#include <torch/version.h>

// NCCL where libtorch has CUDA and c10d's NCCL (torch_compat/CMakeLists.txt, CDUI_NCCL).
#if defined(CDUI_WITH_CUDA) && defined(USE_C10D_NCCL)
#define CDUI_WITH_NCCL 1
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace cdui::torch_compat {

namespace {

#if TORCH_VERSION_MAJOR >= 2
/// A process group that holds `backend` for the device types it reduces.
c10::intrusive_ptr<c10d::ProcessGroup> holding(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                               c10d::ProcessGroup::BackendType type,
                                               const c10::intrusive_ptr<c10d::Backend>& backend,
                                               std::vector<c10::DeviceType> device_types) {
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  for (auto device_type : device_types)
    group->setBackend(device_type, type, backend);
  group->setDefaultBackend(type);
  return group;
}
/// A socket listening at `address`:`port`, for a TCPStore to take over. Throws naming the address.
int listening_socket(const std::string& address, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  auto where = address + ":" + std::to_string(port);
  if (int rc = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    throw std::runtime_error("cannot resolve the rendezvous address " + where + ": " + ::gai_strerror(rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list{found, ::freeaddrinfo};
  int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, 0);
  int on = 1;
  if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0
      || ::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    auto error = std::string{std::strerror(errno)};
    if (fd >= 0)
      ::close(fd);
    throw std::runtime_error("cannot listen at the rendezvous address " + where + ": " + error);
  }
  return fd;
}

/// The port a socket is bound to.
int bound_port(int fd) {
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size);
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}
#endif

} // namespace

tcp_store make_tcp_store(const std::string& address, int port, bool host, int world,
                         std::chrono::milliseconds timeout, std::chrono::milliseconds connect_timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = host;
  options.numWorkers = static_cast<std::size_t>(world);
  options.waitWorkers = false;  // the host reports its port before the others connect
  options.timeout = host ? timeout : std::min(timeout, connect_timeout);
#if TORCH_VERSION_MAJOR >= 2
  if (host) {
    options.masterListenFd = listening_socket(address, port);
    options.port = static_cast<std::uint16_t>(bound_port(*options.masterListenFd));
  }
#endif
  auto store = c10::make_intrusive<c10d::TCPStore>(address, options);
  store->setTimeout(timeout);
  return {store, store->getPort()};
}

c10::intrusive_ptr<c10d::ProcessGroup> gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                  std::chrono::milliseconds timeout, const std::string& interface) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
#if TORCH_VERSION_MAJOR >= 2
  return holding(store, rank, size, c10d::ProcessGroup::BackendType::GLOO, gloo,
                 {c10::DeviceType::CPU, c10::DeviceType::CUDA});
#else
  return gloo;
#endif
}

bool has_nccl() {
#ifdef CDUI_WITH_NCCL
  return true;
#else
  return false;
#endif
}

c10::intrusive_ptr<c10d::ProcessGroup> nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                  std::chrono::milliseconds timeout, int card) {
#ifdef CDUI_WITH_NCCL
  // Each rank on its own card, so that NCCL's communicator and the caching allocator live there.
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(card));
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
#if TORCH_VERSION_MAJOR >= 2
  return holding(store, rank, size, c10d::ProcessGroup::BackendType::NCCL, nccl, {c10::DeviceType::CUDA});
#else
  return nccl;
#endif
#else
  (void)store, (void)rank, (void)size, (void)timeout, (void)card;
  throw std::logic_error("this cdui has no NCCL: its libtorch has no CUDA, or it was built with CDUI_NCCL=OFF");
#endif
}

gradient_reducer::gradient_reducer(const std::vector<at::Tensor>& parameters,
                                   c10::intrusive_ptr<c10d::ProcessGroup> group, std::int64_t first_bucket_bytes,
                                   std::int64_t bucket_bytes) {
  std::vector<bool> sparse(parameters.size(), false);
  auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(
    parameters, {static_cast<std::size_t>(first_bucket_bytes), static_cast<std::size_t>(bucket_bytes)}, sparse);
#if TORCH_VERSION_MAJOR >= 2
  // 2.x takes each bucket's cap where 1.13 took the limits compute_bucket_assignment_by_size gave.
  std::vector<std::int64_t> caps(limits.begin(), limits.end());
  reducer_ = std::make_unique<c10d::Reducer>(parameters, buckets, std::move(group), sparse, bucket_bytes,
                                             /*find_unused_parameters=*/false,
                                             /*gradient_as_bucket_view=*/false,
                                             std::unordered_map<std::size_t, std::string>{}, first_bucket_bytes,
                                             /*skip_all_reduce_unused_params=*/false,
                                             /*use_python_reducer=*/false, std::move(caps));
#else
  reducer_ = std::make_unique<c10d::Reducer>(parameters, buckets, limits, std::move(group), sparse, bucket_bytes,
                                             /*find_unused_parameters=*/false,
                                             /*gradient_as_bucket_view=*/false,
                                             std::unordered_map<std::size_t, std::string>{}, first_bucket_bytes);
#endif
}

gradient_reducer::~gradient_reducer() = default;

void gradient_reducer::prepare_for_backward() {
  reducer_->prepare_for_forward();
  reducer_->prepare_for_backward({});
}

} // namespace cdui::torch_compat
