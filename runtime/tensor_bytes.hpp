#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "runtime/value.hpp"

// Declared, not included, so that this header stays torch-free for actors/.
namespace at {
class Tensor;
}
namespace torch::nn {
class Module;
}

namespace cdui::runtime {

/// Adds up the bytes of tensor storage that what it is given holds, each storage once: a tensor
/// and its views count once, however they arrive (docs/http-api.md, "Sizes"). CPU and
/// CUDA bytes are added together. Only valid while everything added is still alive, since
/// storages are told apart by address.
class tensor_bytes_counter {
public:
  void add(const at::Tensor& tensor);
  /// Parameters and buffers, recursively. Gradients are not counted: a module is sized as built
  /// (docs/http-api.md, "Sizes").
  void add(const torch::nn::Module& module);
  /// A port value as the built-in nodes make it (runtime/nodes/values.hpp): datasets, loaders,
  /// models, optimizer states. Values that hold no tensors add nothing.
  void add_value(const value& v);
  void add_values(const port_values& values);

  [[nodiscard]] std::int64_t bytes() const { return bytes_; }

private:
  bool first_time(const void* identity) { return seen_.insert(identity).second; }

  std::unordered_set<const void*> seen_;
  std::int64_t bytes_ = 0;
};

/// The bytes `tensors` hold, each storage once.
[[nodiscard]] std::int64_t count_tensor_bytes(const std::vector<at::Tensor>& tensors);
/// The bytes of a module's parameters and buffers, each storage once.
[[nodiscard]] std::int64_t count_tensor_bytes(const torch::nn::Module& module);
/// The bytes a node's outputs hold, each storage once across all of them. Named apart from
/// count_tensor_bytes: `{a, b}` would otherwise also read as a map built from two "iterators".
[[nodiscard]] std::int64_t count_value_bytes(const port_values& values);

} // namespace cdui::runtime
