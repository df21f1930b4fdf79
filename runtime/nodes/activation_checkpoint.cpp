#include "runtime/nodes/activation_checkpoint.hpp"

#include <ATen/autocast_mode.h>
#include <ATen/core/ivalue.h>
#include <c10/core/GradMode.h>
#include <torch/autograd.h>

#include "torch_compat/autocast.hpp"

namespace cdui::runtime::nodes {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Autocast's settings on this thread: what a block's forward pass ran under.
struct autocast_state {
  bool cpu = false, gpu = false;
  at::ScalarType cpu_dtype = at::kBFloat16, gpu_dtype = at::kHalf;

  static autocast_state current() {
    using c10::DeviceType;
    return {torch_compat::autocast_enabled(DeviceType::CPU), torch_compat::autocast_enabled(DeviceType::CUDA),
            torch_compat::autocast_dtype(DeviceType::CPU), torch_compat::autocast_dtype(DeviceType::CUDA)};
  }
  void apply() const {
    using c10::DeviceType;
    torch_compat::set_autocast_enabled(DeviceType::CPU, cpu);
    torch_compat::set_autocast_dtype(DeviceType::CPU, cpu_dtype);
    torch_compat::set_autocast_enabled(DeviceType::CUDA, gpu);
    torch_compat::set_autocast_dtype(DeviceType::CUDA, gpu_dtype);
  }
};

/// One block of layers as its forward pass ran it: what its backward needs to run it again the
/// same way.
struct block_run : torch::CustomClassHolder {
  block_run(torch::nn::Sequential layers, std::size_t begin, std::size_t end, at::Generator rng)
      : layers(std::move(layers)), begin(begin), end(end), rng(std::move(rng)) {}

  torch::nn::Sequential layers;
  std::size_t begin, end;
  /// The Dropout layers' generator (undefined: none) and its state before the forward pass.
  at::Generator rng;
  at::Tensor rng_state;
  autocast_state autocast;

  [[nodiscard]] torch::nn::AnyModule& layer(std::size_t i) {
    return *(layers->begin() + static_cast<std::ptrdiff_t>(i));
  }

  /// Its parameters that train, in the order the autograd function takes them.
  [[nodiscard]] std::vector<at::Tensor> trainable() {
    std::vector<at::Tensor> found;
    for (auto i = begin; i < end; ++i)
      for (auto& p : layer(i).ptr()->parameters())
        if (p.requires_grad())
          found.push_back(p);
    return found;
  }

  /// The layers' buffers as they are now, to put back after a rerun.
  [[nodiscard]] std::vector<std::pair<at::Tensor, at::Tensor>> buffers() {
    std::vector<std::pair<at::Tensor, at::Tensor>> kept;
    for (auto i = begin; i < end; ++i)
      for (auto& b : layer(i).ptr()->buffers())
        kept.emplace_back(b, b.clone());
    return kept;
  }

  at::Tensor run(at::Tensor x) {
    for (auto i = begin; i < end; ++i)
      x = layer(i).forward(x);
    return x;
  }

  /// Notes the state the forward pass runs in.
  void record() {
    if (rng.defined()) {
      std::lock_guard<std::mutex> lock{rng.mutex()};
      rng_state = rng.get_state();
    }
    autocast = autocast_state::current();
  }

  /// The forward pass again, with autograd, in the state record() noted; the generator and
  /// autocast are left as they were, a failure included. The layers' buffers (BatchNorm's running
  /// statistics) move again: the caller puts them back once it has differentiated (BatchNorm's
  /// backward reads them).
  at::Tensor rerun(const at::Tensor& x) {
    struct restore {
      block_run& block;
      at::Tensor rng_now;
      autocast_state autocast_now = autocast_state::current();
      ~restore() {
        autocast_now.apply();
        if (block.autocast.cpu || block.autocast.gpu)
          at::autocast::clear_cache();  // the 16-bit weight copies the rerun made
        if (block.rng.defined()) {
          std::lock_guard<std::mutex> lock{block.rng.mutex()};
          block.rng.set_state(rng_now);
        }
      }
    } restore{*this, {}};
    if (rng.defined()) {
      std::lock_guard<std::mutex> lock{rng.mutex()};
      restore.rng_now = rng.get_state();
      rng.set_state(rng_state);
    }
    autocast.apply();
    at::AutoGradMode grad{true};
    return run(x);
  }
};

/// The block as one autograd function: its forward pass keeps the input alone, its backward
/// recomputes the block and differentiates it there. Inputs: the block, its input, then its
/// parameters that train; backward gives a gradient for each (none for the block).
struct checkpointed_block : torch::autograd::Function<checkpointed_block> {
  static at::Tensor forward(AutogradContext* ctx, const c10::intrusive_ptr<block_run>& block,
                            const at::Tensor& input, at::TensorList /*parameters: their gradients*/) {
    block->record();
    ctx->saved_data["block"] = c10::IValue::make_capsule(block);
    ctx->save_for_backward({input});
    return block->run(input);  // grad mode is off in an autograd function's forward pass
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    auto block = c10::static_intrusive_pointer_cast<block_run>(ctx->saved_data["block"].toCapsule());
    auto input = ctx->get_saved_variables()[0];
    auto detached = input.detach().requires_grad_(input.requires_grad());
    auto buffers = block->buffers();
    auto out = block->rerun(detached);
    variable_list wrt;
    if (detached.requires_grad())
      wrt.push_back(detached);
    for (auto& p : block->trainable())
      wrt.push_back(p);
    auto grads = torch::autograd::grad({out}, wrt, {grad_output[0]}, /*retain_graph=*/false,
                                       /*create_graph=*/false, /*allow_unused=*/true);
    {
      at::NoGradGuard no_grad;
      for (auto& [buffer, kept] : buffers)
        buffer.copy_(kept);
    }
    variable_list result{at::Tensor{}};
    std::size_t next = 0;
    result.push_back(detached.requires_grad() ? grads[next++] : at::Tensor{});
    while (next < grads.size())
      result.push_back(grads[next++]);
    return result;
  }
};

} // namespace

at::Tensor model_forward(model_value& model, const at::Tensor& x) {
  auto& net = model.module;
  if (model.checkpoint_segments.empty() || !net->is_training() || !c10::GradMode::is_enabled())
    return net->forward(x);
  auto out = x;
  for (const auto& segment : model.checkpoint_segments) {
    auto block = c10::make_intrusive<block_run>(net, segment.begin, segment.end, model.dropout_rng);
    // A segment that needs no gradient keeps nothing: it runs as itself.
    auto trainable = segment.checkpointed ? block->trainable() : std::vector<at::Tensor>{};
    if (!segment.checkpointed || (trainable.empty() && !out.requires_grad())) {
      out = block->run(out);
      continue;
    }
    out = checkpointed_block::apply(block, out, at::TensorList{trainable});
  }
  return out;
}

} // namespace cdui::runtime::nodes
