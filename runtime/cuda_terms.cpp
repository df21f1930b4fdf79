#include "runtime/cuda_terms.hpp"

#include "runtime/kernel_memory.hpp"

namespace cdui::runtime {

namespace {

/// A parameter tensor's elements, and whether it trains.
struct parameter_tensor {
  std::int64_t elements = 0;
  bool trains = true;
};

std::vector<parameter_tensor> parameters_of(const layer_plan& l, const layer_training& tr) {
  std::vector<parameter_tensor> out;
  if (l.type == "Linear" || l.type == "Conv2d") {
    auto bias = l.bias ? l.out_features : 0;
    out.push_back({l.parameters - bias, tr.weight});
    if (l.bias)
      out.push_back({bias, tr.bias});
    if (tr.lora_rank > 0) {  // A (rank x in) and B (out x rank)
      out.push_back({tr.lora_rank * l.in[0], true});
      out.push_back({l.out_features * tr.lora_rank, true});
    }
  } else if (l.parameters > 0) {  // a norm's scale and shift
    out.push_back({l.parameters / 2, tr.weight});
    out.push_back({l.parameters - l.parameters / 2, tr.bias});
  }
  return out;
}

} // namespace

std::vector<std::int64_t> persistent_tensors(const std::vector<layer_plan>& layers,
                                             const std::vector<layer_training>& training,
                                             std::int64_t state_tensors) {
  std::vector<parameter_tensor> parameters;
  for (std::size_t i = 0; i < layers.size(); ++i)
    for (const auto& p : parameters_of(layers[i], i < training.size() ? training[i] : layer_training{}))
      parameters.push_back(p);
  std::vector<std::int64_t> out;
  for (const auto& p : parameters)
    out.push_back(p.elements * float_bytes);
  for (const auto& l : layers) {
    if (l.buffer_floats > 0) {
      out.push_back(l.buffer_floats / 2 * float_bytes);
      out.push_back((l.buffer_floats - l.buffer_floats / 2) * float_bytes);
    }
    if (l.buffer_int64s > 0)
      out.push_back(l.buffer_int64s * index_bytes);
  }
  for (const auto& p : parameters)
    if (p.trains)
      out.push_back(p.elements * float_bytes);
  for (const auto& p : parameters)
    if (p.trains)
      for (std::int64_t s = 0; s < state_tensors; ++s)
        out.push_back(p.elements * float_bytes);
  return out;
}

} // namespace cdui::runtime
