#include "runtime/nodes/lora.hpp"

#include <cmath>
#include <mutex>

#include <torch/torch.h>

namespace cdui::runtime::nodes {

lora_linear_impl::lora_linear_impl(at::Tensor weight, at::Tensor bias, std::int64_t rank, double scale,
                                   at::Generator& gen)
    : scale_(scale) {
  torch::NoGradGuard no_grad;
  auto out = weight.size(0), in = weight.size(1);
  weight_ = register_parameter("weight", weight.detach(), /*requires_grad=*/false);
  if (bias.defined())
    bias_ = register_parameter("bias", bias.detach(), /*requires_grad=*/false);
  auto bound = 1.0 / std::sqrt(static_cast<double>(in));
  a_ = register_parameter("lora_A", torch::empty({rank, in}).uniform_(-bound, bound, gen));
  b_ = register_parameter("lora_B", torch::zeros({out, rank}));
}

at::Tensor lora_linear_impl::forward(const at::Tensor& x) {
  return at::linear(x, weight_, bias_) + at::linear(at::linear(x, a_), b_) * scale_;
}

at::Tensor lora_linear_impl::merged_weight() const {
  torch::NoGradGuard no_grad;
  return weight_ + at::matmul(b_, a_) * scale_;
}

void save_merged(torch::nn::Sequential& model, torch::serialize::OutputArchive& archive) {
  torch::NoGradGuard no_grad;
  for (const auto& child : model->named_children()) {
    torch::serialize::OutputArchive layer;
    if (const auto* lora = dynamic_cast<const lora_linear_impl*>(child.value().get())) {
      layer.write("weight", lora->merged_weight());
      if (const auto* bias = child.value()->named_parameters(false).find("bias"))
        layer.write("bias", bias->detach());
    } else {
      child.value()->save(layer);
    }
    archive.write(child.key(), layer);
  }
}

} // namespace cdui::runtime::nodes
