#include "runtime/activation_passes.hpp"

#include <optional>

#include "runtime/conv_memory.hpp"
#include "runtime/kernel_memory.hpp"
#include "runtime/layer_backward.hpp"

namespace cdui::runtime {

namespace {

/// What the loop's step and evaluation hold besides the persistent state, layer by layer: the
/// rules of libtorch 1.13's CPU kernels and autograd (what each backward function saves, what it
/// allocates), measured with the counting allocator (docs/training-memory.md, "The static estimate").
class pass_counter {
public:
  /// `m` outlives the counter (each pass is counted by a temporary one).
  explicit pass_counter(const pass_model& m) : model_(m), layers_(*m.layers), training_(m.training) {
    segments_ = m.checkpoint;
    if (segments_.empty())
      segments_.push_back({0, layers_.size(), false});
  }

  /// The peak of one training step at batch `b`: the batch, the forward pass and what autograd
  /// keeps, the loss, the backward pass, then the optimizer's temporaries.
  std::int64_t training_step(std::int64_t b, const step_temporaries& optimizer_temporaries) {
    timeline t{model_.conv_block, model_.one_thread, model_.cuda};
    pass p{t};
    auto x = t.alloc(batch_elements(b, layers_.front().in) * float_bytes);
    auto y = t.alloc(target_bytes(b));
    p.chain = t.hold(x);
    std::vector<layer_kept> layers(layers_.size());
    std::vector<std::optional<checkpointed>> runs(segments_.size());
    std::vector<timeline::id> states;
    for (std::size_t s = 0; s < segments_.size(); ++s) {
      const auto& seg = segments_[s];
      if (!seg.checkpointed || (!trains(seg) && !p.grad)) {
        for (auto i = seg.begin; i < seg.end; ++i)
          forward(p, layers_[i], training(i), layers[i], b);
        continue;
      }
      // Through the checkpoint: the block runs without autograd and keeps its input alone, and the
      // Dropout generator's state, until the backward pass ends.
      runs[s] = checkpointed{t.hold(p.chain), p.grad, p.chain_size};
      if (model_.dropout_generator)
        states.push_back(t.alloc(generator_state_bytes));
      for (auto i = seg.begin; i < seg.end; ++i)
        p.chain = no_grad_layer(t, p.chain, p.chain_size, p.cache, layers_[i], b, no_grad(i, true));
      p.grad = true;
    }
    auto any_grad = p.grad;  // false: nothing in the model trains, the loss needs no backward
    auto g = loss_gradient(p, b);
    for (auto s = segments_.size(); s-- > 0 && any_grad;) {
      const auto& seg = segments_[s];
      bool more = true;
      if (runs[s]) {
        g = rerun_backward(t, seg, *runs[s], layers, g, b);
        more = runs[s]->grad_in;
      } else {
        for (auto i = seg.end; i-- > seg.begin && more;) {
          g = layer_backward(t, layers_[i], layers[i], g, b, nullptr);
          more = layers[i].grad_in;  // false: nothing before this layer needs a gradient
        }
      }
      if (!more)
        break;
    }
    t.drop(g);
    t.drop_all(states);
    // The optimizer steps while the batch is still held.
    t.spike(optimizer_temporaries.bytes, optimizer_temporaries.count);
    t.drop(x);
    t.drop(y);
    return t.peak();
  }

  /// The peak of one validation batch of `b`: under no_grad, over a view of the dataset (not
  /// copied), each layer's output freed once the next one has it.
  std::int64_t evaluation(std::int64_t b) {
    timeline t{model_.conv_block, model_.one_thread, model_.cuda};
    auto chain = timeline::none;
    std::int64_t chain_size = float_bytes;
    std::vector<timeline::id> cache;
    for (std::size_t i = 0; i < layers_.size(); ++i)
      chain = no_grad_layer(t, chain, chain_size, cache, layers_[i], b, no_grad(i, false));
    auto outputs = batch_elements(b, layers_.back().out);
    chain = output_in_float(t, chain, chain_size, outputs);
    t.drop_all(cache);
    auto loss = t.alloc(outputs * float_bytes);  // log_softmax, or mse's difference
    t.drop(loss);
    if (model_.classification)
      t.spike(b * (index_bytes + 1));  // argmax and the comparison with the labels
    t.drop(chain);
    return t.peak();
  }

private:
  /// A pass under way: the tensors held, the one flowing from layer to layer and its element
  /// size, whether it requires grad, and autocast's weight copies until the forward pass ends.
  struct pass {
    explicit pass(timeline& on) : t(on) {}
    timeline& t;
    timeline::id chain = timeline::none;
    std::int64_t chain_size = float_bytes;
    bool grad = false;
    std::vector<timeline::id> cache;
  };

  [[nodiscard]] layer_training training(std::size_t i) const {
    return training_.empty() ? layer_training{} : training_[i];
  }

  /// How layer `i` runs without autograd; `train_mode`: in a checkpointed block in training.
  [[nodiscard]] no_grad_run no_grad(std::size_t i, bool train_mode) const {
    auto tr = training(i);
    return {model_.half, model_.cached_copies, tr.weight, tr.lora_rank, train_mode};
  }

  /// A checkpointed block in training: the input it kept, whether that needs a gradient, its size.
  struct checkpointed {
    timeline::id input = timeline::none;
    bool grad_in = false;
    std::int64_t chain_size = float_bytes;
  };

  /// Whether any parameter of the segment's layers trains.
  [[nodiscard]] bool trains(const forward_segment& seg) const {
    for (auto i = seg.begin; i < seg.end; ++i) {
      auto tr = training(i);
      if ((tr.weight || tr.bias || tr.lora_rank > 0) && (layers_[i].parameters > 0 || tr.lora_rank > 0))
        return true;
    }
    return false;
  }

  /// A checkpointed block's backward from its output's gradient `g`: its layers run again with
  /// autograd from the kept input (their 16-bit weight copies let go when the rerun ends, those
  /// the layers keep excepted), then their backward; the incoming gradient, the rerun's output
  /// and the weights' gradients are let go together when the block's backward returns.
  timeline::id rerun_backward(timeline& t, const forward_segment& seg, const checkpointed& run,
                              std::vector<layer_kept>& layers, timeline::id g, std::int64_t b) const {
    // The block's buffers (BatchNorm's running statistics), copied to put back after the rerun,
    // and the generator's state of the moment, while the rerun draws Dropout's masks again.
    std::int64_t buffers = 0;
    for (auto i = seg.begin; i < seg.end; ++i)
      buffers += layers_[i].buffer_floats * float_bytes + layers_[i].buffer_int64s * index_bytes;
    auto copies = t.alloc(buffers);
    auto now = model_.dropout_generator ? t.alloc(generator_state_bytes) : timeline::none;
    pass q{t};
    q.chain = t.hold(run.input);
    q.chain_size = run.chain_size;
    q.grad = run.grad_in;
    for (auto i = seg.begin; i < seg.end; ++i)
      forward(q, layers_[i], training(i), layers[i], b);
    t.drop_all(q.cache);
    t.drop(now);
    auto out = q.chain;
    auto incoming = t.hold(g);  // the block's backward holds its output's gradient until it returns
    std::vector<timeline::id> grads;
    for (auto i = seg.end; i-- > seg.begin;) {
      g = layer_backward(t, layers_[i], layers[i], g, b, &grads);
      if (!layers[i].grad_in)
        break;
    }
    t.drop(out);
    t.drop(incoming);
    t.drop_all(grads);
    t.drop(copies);
    t.drop(run.input);
    return g;
  }

  /// One layer's forward pass in training: its output, what autograd keeps, its temporaries.
  void forward(pass& p, const layer_plan& l, const layer_training& tr, layer_kept& k, std::int64_t b) const {
    auto& t = p.t;
    k.grad_in = p.grad;
    k.received_size = p.chain_size;
    k.trains = tr;
    auto e_in = batch_elements(b, l.in), e_out = batch_elements(b, l.out);
    timeline::id out = timeline::none;
    if (l.type == "Linear" || l.type == "Conv2d") {
      bool conv = l.type == "Conv2d";
      // Autograd records the layer when its input or one of its parameters needs a gradient.
      bool grad = k.grad_in || tr.weight || tr.bias;
      std::vector<timeline::id> temporaries;
      // A LoRA layer's sum computes its adapter (the right operand) first, then the frozen Linear.
      k.out_size = model_.half ? half_bytes : float_bytes;
      auto adapter = tr.lora_rank > 0 ? lora_forward(p, l, tr.lora_rank, k, b) : std::vector<timeline::id>{};
      auto used = layer_input(t, model_.half, p.chain, p.chain_size, e_in);
      k.in_size = p.chain_size;
      if (model_.half) {
        // The 16-bit copy of the weight lives for the op, unless autocast caches it for the forward
        // pass (fp16, a weight that trains). Linear keeps it only to compute its input's gradient;
        // Conv2d keeps both.
        auto copy = t.alloc(l.cast_parameters * half_bytes);
        (tr.weight && model_.cached_copies ? p.cache : temporaries).push_back(copy);
        if (grad && (k.grad_in || conv))
          k.saved.push_back(t.hold(copy));
      }
      out = conv ? conv_output(t, l, b, model_.half) : t.alloc(e_out * k.out_size);
      if (!conv && model_.half)
        t.cpu_scratch(matmul_scratch(b, l.in[0], l.out[0], false));
      // The matrix product keeps its input for the weight's gradient; the convolution keeps it
      // whenever it is recorded.
      (grad && (conv || tr.weight) ? k.saved : temporaries).push_back(used);
      t.drop_all(temporaries);
      p.grad = grad;
      if (tr.lora_rank > 0) {
        // One C++ expression: its temporaries live until the sum is made.
        auto sum = t.alloc(e_out * k.out_size);
        adapter.push_back(out);
        t.drop_all(adapter);
        out = sum;
        p.grad = true;
      }
    } else {
      k.in_size = k.out_size = p.chain_size;
      if (l.type == "Flatten" || (l.type == "Dropout" && l.p == 0)) {
        out = t.hold(p.chain);
      } else if (l.type == "Dropout") {
        auto keep = t.alloc(e_in * p.chain_size);
        auto product = t.alloc(e_in * p.chain_size);
        out = t.alloc(e_in * p.chain_size);
        t.drop(product);
        if (p.grad)
          k.saved.push_back(keep);
        else
          t.drop(keep);
      } else if (l.type == "MaxPool2d") {
        out = t.alloc(e_out * p.chain_size);
        if (p.grad) {
          k.saved.push_back(t.hold(p.chain));
          k.saved.push_back(t.alloc(e_out * index_bytes));
        }
      } else if (l.type == "LayerNorm" && p.chain_size == half_bytes) {
        // The Model's LayerNorm normalises in fp32 under autocast (runtime/nodes/layers.hpp): it
        // keeps its input's fp32 copy, and the chain goes on in fp32.
        bool grad = k.grad_in || tr.weight || tr.bias;
        k.in_size = k.out_size = float_bytes;
        auto full = t.alloc(e_in * float_bytes);
        out = t.alloc(e_out * float_bytes);
        auto stats = t.alloc(norm_statistics(l, b));
        if (grad) {
          k.saved.push_back(full);
          k.saved.push_back(stats);
        } else {
          t.drop(full);
          t.drop(stats);
        }
        p.grad = grad;
        p.chain_size = float_bytes;
      } else if (l.type == "BatchNorm1d" || l.type == "BatchNorm2d" || l.type == "LayerNorm") {
        bool grad = k.grad_in || tr.weight || tr.bias;
        out = t.alloc(e_out * p.chain_size);
        auto stats = t.alloc(norm_statistics(l, b));
        if (grad) {
          k.saved.push_back(t.hold(p.chain));
          k.saved.push_back(stats);
        } else {
          t.drop(stats);
        }
        p.grad = grad;
      } else {  // ReLU, Tanh (save their output), GELU (saves its input)
        out = t.alloc(e_out * p.chain_size);
        if (p.grad)
          k.saved.push_back(t.hold(l.type == "GELU" ? p.chain : out));
      }
    }
    t.drop(p.chain);
    p.chain = out;
  }

  /// The loss after the forward pass (the output back in fp32, log_softmax kept for backward or
  /// mse's difference), then its gradient as it reaches the last layer.
  timeline::id loss_gradient(pass& p, std::int64_t b) const {
    auto& t = p.t;
    auto outputs = batch_elements(b, layers_.back().out);
    auto output = output_in_float(t, p.chain, p.chain_size, outputs);
    p.chain = timeline::none;
    std::vector<timeline::id> loss_saved;
    if (model_.cross_entropy) {
      loss_saved.push_back(t.alloc(outputs * float_bytes));
      t.drop(output);
    } else {
      t.spike(outputs * float_bytes);
      loss_saved.push_back(output);  // mse keeps the output
    }
    t.drop_all(p.cache);
    auto g = t.alloc(outputs * float_bytes);
    if (model_.cross_entropy) {
      auto g2 = t.alloc(outputs * float_bytes);
      t.drop(g);
      g = g2;
    }
    t.drop_all(loss_saved);
    if (p.chain_size == half_bytes) {
      auto g2 = t.alloc(outputs * half_bytes);
      t.drop(g);
      g = g2;
    }
    return g;
  }

  /// A LoRA layer's adapter on the layer's input: x A^T (kept) and its product with B, and that
  /// times the scale, which are given back to be let go once the sum with the frozen Linear's output
  /// is made.
  std::vector<timeline::id> lora_forward(pass& p, const layer_plan& l, std::int64_t rank, layer_kept& k,
                                         std::int64_t b) const {
    auto& t = p.t;
    auto in = l.in[0], out = l.out[0];
    k.lora_rank = rank;
    if (model_.half) {
      // The adapters' 16-bit copies: each product keeps its weight's (x A^T only to compute x's
      // gradient); autocast caches them for the forward pass in fp16 alone.
      auto a = t.alloc(rank * in * half_bytes), bw = t.alloc(out * rank * half_bytes);
      if (k.grad_in)
        k.saved.push_back(t.hold(a));
      k.saved.push_back(t.hold(bw));
      for (auto copy : {a, bw}) {
        if (model_.cached_copies)
          p.cache.push_back(copy);
        else
          t.drop(copy);
      }
    }
    // x A^T keeps x: the chain, or under autocast its own 16-bit copy when the chain is fp32.
    k.lora_input = model_.half && p.chain_size != half_bytes ? t.alloc(b * in * half_bytes) : t.hold(p.chain);
    k.lora_product = t.alloc(b * rank * k.out_size);
    if (model_.half)
      t.cpu_scratch(matmul_scratch(b, in, rank, false));
    auto product = t.alloc(b * out * k.out_size);
    if (model_.half)
      t.cpu_scratch(matmul_scratch(b, rank, out, false));
    return {product, t.alloc(b * out * k.out_size)};
  }

  [[nodiscard]] std::int64_t target_bytes(std::int64_t b) const {
    if (model_.classification)
      return b * index_bytes;
    return batch_elements(b, layers_.back().out) * float_bytes;
  }

  const pass_model& model_;
  const std::vector<layer_plan>& layers_;
  const std::vector<layer_training>& training_;
  std::vector<forward_segment> segments_;
};

} // namespace

std::int64_t training_step_peak(const pass_model& model, std::int64_t b, const step_temporaries& optimizer_temporaries) {
  return pass_counter{model}.training_step(b, optimizer_temporaries);
}

std::int64_t evaluation_peak(const pass_model& model, std::int64_t b) {
  return pass_counter{model}.evaluation(b);
}

} // namespace cdui::runtime
