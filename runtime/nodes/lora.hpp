#pragma once

// LoRA (PEFT's lora.Linear; docs/graph-format.md, "Freezing and LoRA"): a Linear layer whose
// weight and bias are frozen, with a low-rank update beside them, W x + b + (alpha / rank) B A x.
// Private to runtime/nodes.

#include <cstdint>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/serialize/output-archive.h>

namespace cdui::runtime::nodes {

/// A Linear layer with an adapter. Its parameters keep the Linear's names, `weight` and `bias`
/// (frozen), beside `lora_A` [rank, in] and `lora_B` [out, rank] (PEFT's lora_A and lora_B).
class lora_linear_impl : public torch::nn::Module {
public:
  /// Adapts a Linear's `weight` and `bias` (undefined: none): A drawn from `gen` as PEFT draws it
  /// (kaiming-uniform with a = sqrt(5): U(-1/sqrt(in), 1/sqrt(in))), B zeros, so the untrained
  /// adapter changes nothing.
  lora_linear_impl(at::Tensor weight, at::Tensor bias, std::int64_t rank, double scale, at::Generator& gen);

  at::Tensor forward(const at::Tensor& x);

  /// W + scale B A: the weight of a plain Linear that computes what this layer computes.
  [[nodiscard]] at::Tensor merged_weight() const;

private:
  at::Tensor weight_, bias_, a_, b_;
  double scale_;
};

/// Writes `model` into `archive` as torch::nn::Module::save does, with every LoRA layer written as
/// the plain Linear it equals (its merged weight, its bias): a file a Model without `lora` loads.
void save_merged(torch::nn::Sequential& model, torch::serialize::OutputArchive& archive);

} // namespace cdui::runtime::nodes
