#include "runtime/tensor_bytes.hpp"

#include <memory>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include "runtime/nodes/values.hpp"

namespace cdui::runtime {

void tensor_bytes_counter::add(const at::Tensor& tensor) {
  if (!tensor.defined())
    return;
  // A sparse tensor has no storage of its own; its indices and values do.
  if (tensor.is_sparse()) {
    add(tensor._indices());
    add(tensor._values());
    return;
  }
  if (!tensor.has_storage())
    return;
  const auto& storage = tensor.storage();
  // Views share their base's StorageImpl, so its address is the storage's identity.
  if (first_time(storage.unsafeGetStorageImpl()))
    bytes_ += static_cast<std::int64_t>(storage.nbytes());
}

void tensor_bytes_counter::add(const torch::nn::Module& module) {
  for (const auto& p : module.parameters(/*recurse=*/true))
    add(p);
  for (const auto& b : module.buffers(/*recurse=*/true))
    add(b);
}

void tensor_bytes_counter::add_value(const value& v) {
  using namespace nodes;
  if (const auto* d = std::any_cast<std::shared_ptr<dataset_value>>(&v)) {
    if (*d) {
      add((*d)->inputs);
      add((*d)->targets);
    }
  } else if (const auto* l = std::any_cast<std::shared_ptr<loader_value>>(&v)) {
    if (*l && (*l)->dataset) {
      add((*l)->dataset->inputs);
      add((*l)->dataset->targets);
    }
  } else if (const auto* m = std::any_cast<std::shared_ptr<model_value>>(&v)) {
    if (*m && !(*m)->module.is_empty())
      add(*(*m)->module);
  } else if (const auto* s = std::any_cast<std::shared_ptr<optimizer_state_value>>(&v)) {
    // Not tensor storage but serialised tensors (Adam's moments): held all the same, so counted,
    // once per state object.
    if (*s && first_time(s->get()))
      bytes_ += static_cast<std::int64_t>((*s)->bytes.size());
  }
}

void tensor_bytes_counter::add_values(const port_values& values) {
  for (const auto& [port, v] : values)
    add_value(v);
}

std::int64_t count_tensor_bytes(const std::vector<at::Tensor>& tensors) {
  tensor_bytes_counter counter;
  for (const auto& t : tensors)
    counter.add(t);
  return counter.bytes();
}

std::int64_t count_tensor_bytes(const torch::nn::Module& module) {
  tensor_bytes_counter counter;
  counter.add(module);
  return counter.bytes();
}

std::int64_t count_value_bytes(const port_values& values) {
  tensor_bytes_counter counter;
  counter.add_values(values);
  return counter.bytes();
}

} // namespace cdui::runtime
