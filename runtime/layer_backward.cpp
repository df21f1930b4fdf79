#include "runtime/layer_backward.hpp"

#include "runtime/conv_memory.hpp"

namespace cdui::runtime {

namespace {

/// Autocast's cast of a layer's input, undone: its gradient `gin` goes back to the format the
/// input came in.
timeline::id as_received(timeline& t, timeline::id gin, const layer_kept& k, std::int64_t e_in) {
  if (gin == timeline::none || k.received_size == k.in_size)
    return gin;
  auto back = t.alloc(e_in * k.received_size);
  t.drop(gin);
  return back;
}

/// A Linear's backward: under autocast each product is oneDNN's, with its scratch. With a bias
/// (addmm) the input's gradient comes first, without one (mm) the weight's (its left-hand matrix,
/// the output's gradient, read transposed). A LoRA layer's frozen Linear runs first, then its
/// adapter, which lets go of the incoming gradient, x A^T and x before its part of the input's
/// gradient is added; each part goes back to the input's format first (autocast cast it for each).
timeline::id linear_backward(timeline& t, const layer_plan& l, layer_kept& k, timeline::id& g, std::int64_t b,
                             std::vector<timeline::id>* grads, std::vector<timeline::id>& temporaries) {
  auto e_in = batch_elements(b, l.in);
  auto half = k.out_size == half_bytes;
  auto gin = timeline::none;
  auto input = [&] {
    if (!k.grad_in)
      return;
    gin = t.alloc(e_in * k.in_size);
    t.cpu_scratch(half ? matmul_scratch(b, l.out[0], l.in[0], false) : 0);
  };
  auto weight = [&] {
    if (!k.trains.weight)
      return;
    (grads != nullptr && !half ? *grads : temporaries).push_back(t.alloc(l.cast_parameters * k.out_size));
    t.cpu_scratch(half ? matmul_scratch(l.out[0], b, l.in[0], true) : 0);
  };
  if (!l.bias)
    weight();
  input();
  if (k.lora_rank > 0) {
    gin = as_received(t, gin, k, e_in);
    auto adapter = lora_backward(t, l, k.lora_rank, {k.in_size, k.out_size, true, k.grad_in}, b,
                                 {g, k.lora_product, k.lora_input}, temporaries);
    g = timeline::none;
    gin = accumulate(t, gin, as_received(t, adapter, k, e_in), e_in * k.received_size);
  }
  if (l.bias)
    weight();
  return gin;
}

} // namespace

timeline::id layer_backward(timeline& t, const layer_plan& l, layer_kept& k, timeline::id g, std::int64_t b,
                            std::vector<timeline::id>* grads) {
  auto e_in = batch_elements(b, l.in);
  auto gin = timeline::none;
  std::vector<timeline::id> temporaries;
  if (l.type == "Conv2d") {
    auto made = conv_backward(t, l, b, {k.in_size, k.out_size, k.trains.weight, k.grad_in});
    gin = made.input;
    if (grads != nullptr && k.trains.weight && k.out_size == float_bytes)
      grads->push_back(made.weight);
    else
      t.drop(made.weight);
  } else if (l.type == "Linear") {
    gin = linear_backward(t, l, k, g, b, grads, temporaries);
  } else if (l.type == "Flatten" || (l.type == "Dropout" && l.p == 0)) {
    gin = t.hold(g);
  } else if (l.type == "Dropout") {
    // Two backward functions: the division by 1 - p, then the product with the mask; each lets
    // go of its incoming gradient before the next one runs.
    auto divided = t.alloc(e_in * k.in_size);
    t.drop(g);
    g = timeline::none;
    gin = t.alloc(e_in * k.in_size);
    t.drop(divided);
  } else if (l.type == "BatchNorm1d" || l.type == "BatchNorm2d") {
    // libtorch 1.13 allocates the input's gradient twice, the first let go once the second is
    // made; without an input gradient, neither.
    if (k.grad_in) {
      gin = t.alloc(e_in * k.in_size);
      t.spike(e_in * k.in_size);
    }
  } else if (k.grad_in) {  // LayerNorm, MaxPool2d, the activations
    gin = t.alloc(e_in * k.in_size);
  }
  t.drop(g);
  t.drop_all(k.saved);
  // Under autocast the weights' gradients come back to fp32 once the layer has let go of what
  // it kept, before the next layer's backward runs.
  if (grads != nullptr && l.cast_parameters > 0 && k.trains.weight && k.out_size == half_bytes)
    grads->push_back(t.alloc(l.cast_parameters * float_bytes));
  else if (k.out_size == half_bytes && l.cast_parameters > 0 && k.trains.weight)
    t.spike(l.cast_parameters * float_bytes);
  t.drop_all(temporaries);
  return k.lora_rank > 0 ? gin : as_received(t, gin, k, e_in);
}

} // namespace cdui::runtime
